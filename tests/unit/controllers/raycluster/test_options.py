from kuberay.api.config import Configuration
from kuberay.api.settings import Environment, OperatorSettings
from kuberay.controllers.raycluster.context import ClusterOptions


def test_environment_follows_upstreams_parsing_rules() -> None:
    environment = Environment.from_mapping(
        {
            "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "60",
            "ENABLE_RANDOM_POD_DELETE": "TRUE",
            "ENABLE_GCS_FT_REDIS_CLEANUP": "False",
            "ENABLE_INIT_CONTAINER_INJECTION": "no",  # only "false" turns it off
            "ENABLE_DETERMINISTIC_HEAD_POD_NAME": "1",  # only "true" turns it on
            "CLUSTER_DOMAIN": "corp.local",
        }
    )
    options = ClusterOptions.from_settings(
        OperatorSettings(config=Configuration(default_pod_labels={"team": "ml"}), environment=environment)
    )
    assert options.env.requeue_seconds == 60
    assert options.env.random_pod_delete and not options.env.gcs_ft_redis_cleanup
    assert options.pods.init_container_injection and not options.pods.deterministic_head_pod_name
    assert options.pods.cluster_domain == "corp.local"
    assert options.pods.default_pod_labels == {"team": "ml"}


def test_defaults_when_unset() -> None:
    options = ClusterOptions.from_settings(OperatorSettings(environment=Environment.from_mapping({})))
    assert options.env.requeue_seconds == 300
    assert options.env.gcs_ft_redis_cleanup and not options.env.random_pod_delete
    assert options.pods.cluster_domain == "cluster.local"
    assert options.conditions_enabled
