from kuberay.api.features import FeatureGates
from kuberay.controllers.raycluster.context import ClusterOptions


def test_environment_follows_upstreams_parsing_rules() -> None:
    options = ClusterOptions.from_environ(
        FeatureGates(),
        {"default_pod_labels": {"team": "ml"}},
        {
            "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "60",
            "ENABLE_RANDOM_POD_DELETE": "TRUE",
            "ENABLE_GCS_FT_REDIS_CLEANUP": "False",
            "ENABLE_INIT_CONTAINER_INJECTION": "no",  # only "false" turns it off
            "ENABLE_DETERMINISTIC_HEAD_POD_NAME": "1",  # only "true" turns it on
            "CLUSTER_DOMAIN": "corp.local",
        },
    )
    assert options.requeue_seconds == 60
    assert options.random_pod_delete and not options.gcs_ft_redis_cleanup
    assert options.pods.init_container_injection and not options.pods.deterministic_head_pod_name
    assert options.pods.cluster_domain == "corp.local"
    assert options.pods.default_pod_labels == {"team": "ml"}


def test_defaults_when_unset_or_unparsable() -> None:
    options = ClusterOptions.from_environ(
        FeatureGates(), {}, {"RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "soon"}
    )
    assert options.requeue_seconds == 300
    assert options.gcs_ft_redis_cleanup and not options.random_pod_delete
    assert options.pods.cluster_domain == "cluster.local"
    assert options.conditions_enabled
