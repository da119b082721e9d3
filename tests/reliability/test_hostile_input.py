"""Hostile ray.io objects (Hypothesis, strategies generated from the CRD schemas: see crd_strategies.py) sent
through localkube's admission, `kuberay validate`, and the operator's reconcile of what admission accepts.

Properties: no 500, no hang (every request has a bounded timeout), no crash; every 4xx names the field
(hostile.py says how); `kuberay validate` agrees with admission where both decide (an object the offline
check passes is admitted); an unknown field is refused by name under `fieldValidation=Strict`, warned
about by name by default and dropped either way; the operator, watching the namespace, gives every
admitted object a status or a Warning Event, logs no traceback and stays up. Derandomized with bounded
example counts, so a run is reproducible and takes about a minute; the catalogue of cases tried is printed.
HOSTILE_EXAMPLES_PER_CASE=N runs N cases of each kind instead of 20 (with `--timeout` to match: 120 takes ~5 min).
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import httpx
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kuberay.cli import app
from reliability import crd_strategies as cs
from reliability.hostile import Catalogue, names_the_field
from support.eventually import eventually
from support.localkube_process import LocalKubeProcess
from support.operator_process import OperatorProcess

PLURALS = {"RayCluster": "rayclusters", "RayJob": "rayjobs", "RayService": "rayservices", "RayCronJob": "raycronjobs"}  # fmt: skip
# x 9 kinds of case: 180 objects, 10-20 s of admission on an idle machine; more for a longer hunt.
EXAMPLES_PER_CASE = int(os.environ.get("HOSTILE_EXAMPLES_PER_CASE", "20"))
KEPT_FOR_THE_OPERATOR = 48  # admitted objects left for the operator; the rest are deleted at once
_SETTINGS = settings(
    max_examples=EXAMPLES_PER_CASE,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    # No shrinking: a case is one mutation of an example already, and shrinking objects of this size takes
    # minutes; the failing case is printed as it was generated.
    phases=(Phase.explicit, Phase.generate),
)


def _validate(case: cs.Case) -> tuple[int, str]:
    """`kuberay validate -f -` on the case as YAML (its JSON body when too deep for a YAML dumper: JSON is
    YAML, save for characters YAML does not allow raw, which the dumper escapes); exit code and output."""
    text = case.body().decode() if case.deep else yaml.safe_dump(case.obj, allow_unicode=True)
    result = CliRunner().invoke(app, ["validate", "-f", "-"], input=text)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"kuberay validate crashed on {case!r}") from result.exception
    return result.exit_code, result.stdout + result.stderr


def _check_validate(case: cs.Case, code: int, output: str) -> None:
    assert code in (0, 1, 2), (case, code, output)
    if code == 2:  # the text is not a YAML stream of objects: says so, without a field
        assert output.startswith("error: "), (case, output)
    elif code == 1:
        lines = [line for line in output.split("\n") if line and not line.endswith(": ok")]
        assert all(line.isprintable() for line in lines), (case, output)
        assert lines, (case, output)
        for line in lines:  # `Kind/name: field: reason`
            _, _, rest = line.partition(": ")
            status = {"message": rest, "details": {"causes": [{"field": rest.split(": ")[0]}]}}
            assert names_the_field(status, case.field, any_field=True), (case, line)


def _send(api: httpx.Client, namespace: str, case: cs.Case, validation: str | None) -> httpx.Response:
    url = f"/apis/ray.io/v1/namespaces/{namespace}/{PLURALS[case.kind]}"
    params = {"fieldValidation": validation} if validation else {}
    return api.post(url, content=case.body(), params=params, headers={"Content-Type": "application/json"})


def test_hostile_objects_through_admission_validate_and_the_operator(
    localkube: LocalKubeProcess, namespace: str, tmp_path: Path
) -> None:
    catalogue = Catalogue("hostile ray.io objects (case kind x outcome: admission status, validate exit)")
    kept: list[tuple[str, str]] = []
    names = itertools.count()
    log = tmp_path / "operator.log"
    operator = OperatorProcess(localkube.kubeconfig, log, f"--watch-namespace={namespace}").start()
    try:
        with localkube.client(timeout=httpx.Timeout(20)) as api:

            def check(case: cs.Case, validation: str | None) -> None:
                if case.path != ("metadata", "name"):
                    case.obj["metadata"]["name"] = f"{case.case.replace('_', '-')}-{next(names)}"
                code, output = _validate(case)
                _check_validate(case, code, output)
                catalogue.add(case.case, f"validate {code}")
                reply = _send(api, namespace, case, validation)
                catalogue.add(case.case, str(reply.status_code))
                assert reply.status_code < 500, (case, reply.text)
                if reply.status_code >= 400:
                    status = reply.json()
                    assert status["kind"] == "Status", (case, reply.text)
                    # A clash with an earlier hostile name is refused by that name.
                    if reply.status_code == 409 and case.case == "hostile_name":
                        return
                    materialized = bool(case.notes.get("materialized"))
                    assert names_the_field(status, case.field, any_field=materialized), (case, status)
                    assert code != 0, f"kuberay validate passes what admission refuses: {case!r}: {status}"
                    return
                assert reply.status_code == 201, (case, reply.text)
                stored = reply.json()
                if case.case == "unknown_field":
                    assert validation != "Strict", case
                    assert case.path[-1] not in (cs.get(stored, case.path[:-1]) or {}), case
                    if validation is None:  # the default is Warn: the warning names the field
                        warning = reply.headers.get("warning", "")  # RFC 7234: quotes escaped
                        assert f'unknown field \\"{case.field}\\"' in warning, (case, warning)
                name = stored["metadata"]["name"]
                if len(kept) < KEPT_FOR_THE_OPERATOR:
                    kept.append((case.kind, name))
                else:
                    api.delete(f"/apis/ray.io/v1/namespaces/{namespace}/{PLURALS[case.kind]}/{name}")

            for kind_of_case in cs.CASE_KINDS:
                validations = st.sampled_from([None, "Strict", "Ignore"] if kind_of_case == "unknown_field" else [None])  # fmt: skip

                @_SETTINGS
                @given(case=cs.all_kinds(kind_of_case, namespace), validation=validations)
                def fuzz(case: cs.Case, validation: str | None) -> None:
                    check(case, validation)

                fuzz()
            _every_object_gets_a_status_or_a_warning(api, namespace, kept, operator)
    finally:
        catalogue.report()
        operator.stop()
    text = log.read_text()
    assert "Traceback" not in text, text[text.find("Traceback") - 2000 : text.find("Traceback") + 4000]


def _every_object_gets_a_status_or_a_warning(
    api: httpx.Client, namespace: str, kept: list[tuple[str, str]], operator: OperatorProcess
) -> None:
    waiting = set(kept)

    def answered() -> bool:
        assert operator.process is not None and operator.process.poll() is None, "the operator exited"
        events = api.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]
        warned = {(e["involvedObject"].get("kind"), e["involvedObject"].get("name")) for e in events if e.get("type") == "Warning"}  # fmt: skip
        for kind in PLURALS:
            listed = api.get(f"/apis/ray.io/v1/namespaces/{namespace}/{PLURALS[kind]}").json()["items"]
            with_status = {(kind, o["metadata"]["name"]) for o in listed if o.get("status")}
            waiting.difference_update(with_status | warned)
        return not waiting

    eventually(
        answered, 90, lambda: f"a status or a Warning Event for each (still none: {sorted(waiting)})", every=1
    )


# -- what the pass found, kept as examples ----------------------------------------------------------------


def _raycluster(namespace: str, name: str) -> dict[str, object]:
    cluster = cs.example("RayCluster")
    cluster["metadata"] = {"name": name, "namespace": namespace}
    return cluster


def test_bodies_nested_past_the_bound_are_400s_that_name_the_field(localkube: LocalKubeProcess, namespace: str) -> None:  # fmt: skip
    # Was a 500: a 500-deep list where a map belongs overflowed the recursion of admission's deep copy.
    url = f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters"
    body = json.dumps(_raycluster(namespace, "deep")).replace('"requests": {', '"requests": ' + "[" * 500 + "]" * 500 + ', "x": {', 1)  # fmt: skip
    with localkube.client(timeout=20) as api:
        refused = api.post(url, content=body, headers={"Content-Type": "application/json"})
        assert refused.status_code == 400
        path = "spec.headGroupSpec.template.spec.containers[0].resources.requests" + "[0]" * 92
        assert refused.json()["message"] == f"the request body could not be decoded: {path}: nested deeper than 100 levels"  # fmt: skip
        as_yaml = api.post(url, content=body, headers={"Content-Type": "application/yaml"})
        assert as_yaml.status_code == 400
        assert as_yaml.json()["message"].endswith("nested deeper than 100 levels")
        created = api.post(url, json=_raycluster(namespace, "shallow"))
        assert created.status_code == 201
        # A JSON patch may be shallow enough itself and still make the object too deep where it lands.
        deep: dict[str, object] = {}
        patch = [{"op": "add", "path": "/spec/headGroupSpec/rayStartParams/x", "value": deep}]
        for _ in range(96):
            deep["a"] = deep = {}
        patched = api.patch(f"{url}/shallow", content=json.dumps(patch), headers={"Content-Type": "application/json-patch+json"})  # fmt: skip
        assert patched.status_code == 400
        assert patched.json()["message"].startswith(
            "the patched object: spec.headGroupSpec.rayStartParams.x.a.a"
        )
        assert api.get(f"{url}/shallow").json()["metadata"]["generation"] == 1


def test_unknown_fields_are_warned_about_by_default(localkube: LocalKubeProcess, namespace: str) -> None:
    # Was silent: the default fieldValidation is Warn (Kubernetes 1.23+), not Ignore.
    cluster = _raycluster(namespace, "warned")
    cluster["spec"]["bogus"] = 1  # type: ignore[index]
    with localkube.client(timeout=20) as api:
        created = api.post(f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", json=cluster)
        assert created.status_code == 201
        assert created.headers["warning"] == '299 - "unknown field \\"spec.bogus\\""'
        assert "bogus" not in created.json()["spec"]
        ignored = api.post(
            f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters",
            json={**cluster, "metadata": {"name": "ignored"}},
            params={"fieldValidation": "Ignore"},
        )
        assert ignored.status_code == 201
        assert "warning" not in ignored.headers
