from kuberay.builders import names


def test_check_name_keeps_the_last_50_and_fixes_the_first_character() -> None:
    assert names.check_name("a" * 10 + "b" * 50) == "b" * 50
    assert names.check_name("1abc") == "rabc"
    assert names.check_name("-abc") == "rabc"
    assert names.check_name("$abc") == "$abc"  # a symbol, not punctuation
    assert names.check_name("x" * 49 + "-" + "7" + "y" * 49)[:2] == "ry"


def test_check_label_keeps_the_last_63_and_allows_a_leading_digit() -> None:
    assert names.check_label("1abc") == "1abc"
    assert names.check_label("_abc") == "rabc"
    assert names.check_label("a" * 70) == "a" * 63


def test_pod_name_keeps_the_first_50_lowercased() -> None:
    assert names.pod_name("RayCluster-Sample", "head", True) == "raycluster-sample-head-"
    assert names.pod_name("RayCluster-Sample", "head", False) == "raycluster-sample-head"
    assert names.pod_name("c" * 60, "worker", True) == "c" * 50 + "-worker-"


def test_head_service_and_fqdn() -> None:
    assert names.head_fqdn("rc", "ns", {}, "cluster.local") == "rc-head-svc.ns.svc.cluster.local"
    spec = {"headGroupSpec": {"headService": {"metadata": {"name": "custom"}}}}
    assert names.head_fqdn("rc", "ns", spec, "example.org") == "custom.ns.svc.example.org"
    assert names.ray_ip("custom.ns.svc.example.org") == "custom"
    assert names.identifier("rc", "head") == "rc-head"
