"""Upstream KubeRay's exact strings and numbers: label and annotation keys, finalizers, environment
variable names, ports and port names, object-name parts, reserved volume and container names.

Everything here is a wire-compatibility fact (users' selectors, dashboards and Ray itself read these
values), so each one is spelled exactly as upstream's `ray-operator/controllers/ray/utils/constant.go`
spells it. Values only: no logic. Sections are grouped by what the string names; add new constants to the
section they belong to.
"""

from __future__ import annotations

from typing import Final

# --- API group and versions -------------------------------------------------------------------------------
GROUP: Final = "ray.io"
VERSION: Final = "v1"
API_VERSION: Final = "ray.io/v1"
CONFIG_API_VERSION: Final = "config.ray.io/v1alpha1"

# --- Operator identity --------------------------------------------------------------------------------------
# The value KubeRay writes to `ray.io/kuberay-version` and to Ray's usage-stats tags.
KUBERAY_VERSION: Final = "nightly"
# `spec.managedBy` values: KubeRay's own, and the only other value the CRD admits.
KUBERAY_CONTROLLER: Final = "ray.io/kuberay-operator"
MULTIKUEUE_CONTROLLER: Final = "kueue.x-k8s.io/multikueue"
LEADER_ELECTION_ID: Final = "ray-operator-leader"

# --- Labels on the objects KubeRay creates ------------------------------------------------------------------
RAY_CLUSTER_LABEL: Final = "ray.io/cluster"
RAY_NODE_TYPE_LABEL: Final = "ray.io/node-type"
RAY_NODE_GROUP_LABEL: Final = "ray.io/group"
RAY_NODE_LABEL: Final = "ray.io/is-ray-node"
RAY_ID_LABEL: Final = "ray.io/identifier"
RAY_ORIGINATED_FROM_CR_NAME_LABEL: Final = "ray.io/originated-from-cr-name"
RAY_ORIGINATED_FROM_CRD_LABEL: Final = "ray.io/originated-from-crd"
RAY_CLUSTER_SERVING_SERVICE_LABEL: Final = "ray.io/serve"
RAY_CLUSTER_HEADLESS_SERVICE_LABEL: Final = "ray.io/headless-worker-svc"
RAY_JOB_SUBMISSION_MODE_LABEL: Final = "ray.io/job-submission-mode"
RAY_CRON_JOB_NAME_LABEL: Final = "ray.io/cronjob-name"
# Multi-host worker groups (gate RayMultiHostIndexing).
RAY_WORKER_REPLICA_NAME_LABEL: Final = "ray.io/worker-group-replica-name"
RAY_WORKER_REPLICA_INDEX_LABEL: Final = "ray.io/worker-group-replica-index"
RAY_HOST_INDEX_LABEL: Final = "ray.io/replica-host-index"
# Batch schedulers read these from the RayCluster's labels.
RAY_PRIORITY_CLASS_NAME_LABEL: Final = "ray.io/priority-class-name"
RAY_GANG_SCHEDULING_ENABLED_LABEL: Final = "ray.io/gang-scheduling-enabled"
KUBERNETES_APPLICATION_NAME_LABEL: Final = "app.kubernetes.io/name"
KUBERNETES_CREATED_BY_LABEL: Final = "app.kubernetes.io/created-by"
KUBERNETES_COMPONENT_LABEL: Final = "app.kubernetes.io/component"
# `clusterSelector` of a RayJob: the only key that is honoured.
RAY_JOB_CLUSTER_SELECTOR_KEY: Final = RAY_CLUSTER_LABEL

# --- Label values -------------------------------------------------------------------------------------------
APPLICATION_NAME: Final = "kuberay"  # app.kubernetes.io/name
COMPONENT_NAME: Final = "kuberay-operator"  # app.kubernetes.io/created-by
RAY_NODE_LABEL_VALUE: Final = "yes"  # ray.io/is-ray-node
HEAD_NODE: Final = "head"  # ray.io/node-type
WORKER_NODE: Final = "worker"
REDIS_CLEANUP_NODE: Final = "redis-cleanup"
HEAD_GROUP_NAME: Final = "headgroup"  # ray.io/group on head Pods
SUBMITTER_GROUP_NAME: Final = "submittergroup"
# ray.io/originated-from-crd
RAY_CLUSTER_CRD: Final = "RayCluster"
RAY_JOB_CRD: Final = "RayJob"
RAY_SERVICE_CRD: Final = "RayService"
ENABLE_SERVING_SERVICE_TRUE: Final = "true"  # ray.io/serve on Pods of RayService clusters
ENABLE_SERVING_SERVICE_FALSE: Final = "false"

# --- Annotations --------------------------------------------------------------------------------------------
RAY_FT_ENABLED_ANNOTATION: Final = "ray.io/ft-enabled"
RAY_EXTERNAL_STORAGE_NS_ANNOTATION: Final = "ray.io/external-storage-namespace"
RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION: Final = "ray.io/gcs-ft-deletion-timeout"
RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION: Final = "ray.io/overwrite-container-cmd"
ENABLE_SERVE_SERVICE_ANNOTATION: Final = "ray.io/enable-serve-service"
DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION: Final = "ray.io/disable-provisioned-head-restart"
UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION: Final = "ray.io/upgrade-strategy-recreate-hash"
KUBERAY_VERSION_ANNOTATION: Final = "ray.io/kuberay-version"
HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_ANNOTATION: Final = (
    "ray.io/hash-without-replicas-and-workers-to-delete"
)
NUM_WORKER_GROUPS_ANNOTATION: Final = "ray.io/num-worker-groups"
RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION: Final = "ray.io/initializing-timeout"
RAY_CRON_JOB_TIMESTAMP_ANNOTATION: Final = "ray.io/cronjob-scheduled-timestamp"
INGRESS_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"

# --- Finalizers ---------------------------------------------------------------------------------------------
GCS_FT_REDIS_CLEANUP_FINALIZER: Final = "ray.io/gcs-ft-redis-cleanup-finalizer"
RAY_JOB_STOP_JOB_FINALIZER: Final = "ray.io/rayjob-finalizer"
RAY_SERVICE_FINALIZER: Final = "ray.io/rayservice-finalizer"

# --- Ports and port names -----------------------------------------------------------------------------------
DEFAULT_CLIENT_PORT: Final = 10001
DEFAULT_GCS_SERVER_PORT: Final = 6379
DEFAULT_DASHBOARD_PORT: Final = 8265
DEFAULT_METRICS_PORT: Final = 8080
DEFAULT_DASHBOARD_AGENT_LISTEN_PORT: Final = 52365
DEFAULT_SERVING_PORT: Final = 8000
DEFAULT_COLLECTOR_EVENTS_PORT: Final = 8084
# Ours: on the collector's events port, the final snapshot the head container's preStop hook waits for.
COLLECTOR_FINAL_SNAPSHOT_PATH: Final = "/v1/final-snapshot"
DEFAULT_GATEWAY_LISTENER_PORT: Final = 80
CLIENT_PORT_NAME: Final = "client"
GCS_SERVER_PORT_NAME: Final = "gcs-server"
DASHBOARD_PORT_NAME: Final = "dashboard"
METRICS_PORT_NAME: Final = "metrics"
SERVING_PORT_NAME: Final = "serve"
GATEWAY_LISTENER_PORT_NAME: Final = "http"
DEFAULT_SERVICE_APP_PROTOCOL: Final = "tcp"
LOCAL_HOST: Final = "127.0.0.1"
DEFAULT_CLUSTER_DOMAIN: Final = "cluster.local"

# --- Object names -------------------------------------------------------------------------------------------
# Suffixes appended to the owner's name (`<cluster>-head-svc`, ...).
HEAD_SERVICE_SUFFIX: Final = "-head-svc"
SERVE_SERVICE_SUFFIX: Final = "-serve-svc"
HEADLESS_SERVICE_SUFFIX: Final = "-headless"
HEAD_INGRESS_SUFFIX: Final = "-head-ingress"
HEAD_ROUTE_SUFFIX: Final = "-head-route"
REDIS_CLEANUP_SUFFIX: Final = "-redis-cleanup"
GCS_STORAGE_PVC_SUFFIX: Final = "-gcs-pvc"
GATEWAY_SUFFIX: Final = "-gateway"
HTTP_ROUTE_SUFFIX: Final = "-httproute"
# cert-manager objects are `<prefix>-<cluster>`; the CA secret is `<cluster>-ca-secret-<uid[:8]>`.
RAY_SELF_SIGNED_ISSUER_PREFIX: Final = "ray-selfsigned-issuer"
RAY_CA_CERTIFICATE_PREFIX: Final = "ray-ca-certificate"
RAY_CA_ISSUER_PREFIX: Final = "ray-ca-issuer"
RAY_HEAD_CERT_PREFIX: Final = "ray-head-cert"
RAY_WORKER_CERT_PREFIX: Final = "ray-worker-cert"
RAY_HEAD_SECRET_PREFIX: Final = "ray-head-secret"
RAY_WORKER_SECRET_PREFIX: Final = "ray-worker-secret"
RAY_CA_SECRET_PREFIX: Final = "ca-secret"
DEFAULT_SERVE_APP_NAME: Final = "default"
# Name lengths bounded by the longest derived name (`-serve-svc`, a 6-char cluster suffix, `-<minute>`).
MAX_RAY_CLUSTER_NAME_LENGTH: Final = 53
MAX_RAY_SERVICE_NAME_LENGTH: Final = MAX_RAY_CLUSTER_NAME_LENGTH - 6
MAX_RAY_JOB_NAME_LENGTH: Final = MAX_RAY_CLUSTER_NAME_LENGTH - 6
MAX_RAY_CRON_JOB_NAME_LENGTH: Final = MAX_RAY_JOB_NAME_LENGTH - 11

# --- Containers, volumes and mounts -------------------------------------------------------------------------
RAY_CONTAINER_INDEX: Final = 0
AUTOSCALER_CONTAINER_NAME: Final = "autoscaler"
SUBMITTER_CONTAINER_NAME: Final = "ray-job-submitter"
COLLECTOR_CONTAINER_NAME: Final = "ray-history-collector"
WAIT_GCS_READY_INIT_CONTAINER_NAME: Final = "wait-gcs-ready"
WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME: Final = "wait-for-tls-ip-san"
SHARED_MEMORY_VOLUME_NAME: Final = "shared-mem"
SHARED_MEMORY_MOUNT_PATH: Final = "/dev/shm"
RAY_LOG_VOLUME_NAME: Final = "ray-logs"
RAY_LOG_MOUNT_PATH: Final = "/tmp/ray"
GCS_STORAGE_VOLUME_NAME: Final = "gcs-storage"
GCS_STORAGE_MOUNT_PATH: Final = "/data/gcs"
GCS_STORAGE_DEFAULT_SIZE: Final = "1Gi"
GCS_STORAGE_ROCKSDB_VALUE: Final = "rocksdb"
RAY_TLS_VOLUME_NAME: Final = "ray-tls"
RAY_TLS_CERT_MOUNT_PATH: Final = "/etc/ray/tls"
RAY_TOKEN_VOLUME_NAME: Final = "ray-token"
RAY_TOKEN_MOUNT_PATH: Final = "/var/run/secrets/ray.io/serviceaccount"
# Data key of the auth token Secret.
RAY_AUTH_TOKEN_SECRET_KEY: Final = "auth_token"

# --- Environment variables of Ray containers ----------------------------------------------------------------
RAY_CLUSTER_NAME: Final = "RAY_CLUSTER_NAME"
RAY_CLUSTER_NAMESPACE: Final = "RAY_CLUSTER_NAMESPACE"
RAY_CLOUD_INSTANCE_ID: Final = "RAY_CLOUD_INSTANCE_ID"
RAY_NODE_TYPE_NAME: Final = "RAY_NODE_TYPE_NAME"
RAY_IP: Final = "RAY_IP"
FQ_RAY_IP: Final = "FQ_RAY_IP"
RAY_PORT: Final = "RAY_PORT"
RAY_ADDRESS: Final = "RAY_ADDRESS"
RAY_DASHBOARD_ADDRESS: Final = "RAY_DASHBOARD_ADDRESS"
RAY_JOB_SUBMISSION_ID: Final = "RAY_JOB_SUBMISSION_ID"
RAY_REDIS_ADDRESS: Final = "RAY_REDIS_ADDRESS"
REDIS_USERNAME: Final = "REDIS_USERNAME"
REDIS_PASSWORD: Final = "REDIS_PASSWORD"
RAY_EXTERNAL_STORAGE_NS: Final = "RAY_external_storage_namespace"
RAY_GCS_STORAGE: Final = "RAY_gcs_storage"
RAY_GCS_STORAGE_PATH: Final = "RAY_gcs_storage_path"
RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S: Final = "RAY_gcs_rpc_server_reconnect_timeout_s"
DEFAULT_WORKER_RAY_GCS_RECONNECT_TIMEOUT_S: Final = "600"
RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO: Final = "RAY_timeout_ms_task_wait_for_death_info"
RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS: Final = "RAY_gcs_server_request_timeout_seconds"
RAY_SERVE_KV_TIMEOUT_S: Final = "RAY_SERVE_KV_TIMEOUT_S"
RAY_USAGE_STATS_KUBERAY_IN_USE: Final = "RAY_USAGE_STATS_KUBERAY_IN_USE"
RAY_USAGE_STATS_EXTRA_TAGS: Final = "RAY_USAGE_STATS_EXTRA_TAGS"
RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE: Final = "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"
KUBERAY_GEN_RAY_START_CMD: Final = "KUBERAY_GEN_RAY_START_CMD"
KUBERAY_GEN_AUTOSCALER_START_CMD: Final = "KUBERAY_GEN_AUTOSCALER_START_CMD"
RAY_START_ULIMIT_OPEN_FILES: Final = "RAY_START_ULIMIT_OPEN_FILES"
RAY_ENABLE_AUTOSCALER_V2: Final = "RAY_enable_autoscaler_v2"
RAY_HEAD_POD_NAME: Final = "RAY_HEAD_POD_NAME"
KUBERAY_CRD_VER: Final = "KUBERAY_CRD_VER"
RAY_REDIS_DB_CONNECT_RETRIES: Final = "RAY_redis_db_connect_retries"
RAY_REDIS_DB_CONNECT_WAIT_MILLISECONDS: Final = "RAY_redis_db_connect_wait_milliseconds"
# Token authentication.
RAY_AUTH_MODE: Final = "RAY_AUTH_MODE"
RAY_AUTH_TOKEN: Final = "RAY_AUTH_TOKEN"
RAY_ENABLE_K8S_TOKEN_AUTH: Final = "RAY_ENABLE_K8S_TOKEN_AUTH"
# mTLS.
RAY_USE_TLS: Final = "RAY_USE_TLS"
RAY_TLS_SERVER_CERT: Final = "RAY_TLS_SERVER_CERT"
RAY_TLS_SERVER_KEY: Final = "RAY_TLS_SERVER_KEY"
RAY_TLS_CA_CERT: Final = "RAY_TLS_CA_CERT"
# History-server collector sidecar, and the Ray event export it needs.
POD_IP: Final = "POD_IP"
RAY_ROLE: Final = "RAY_ROLE"
OWNER_KIND: Final = "OWNER_KIND"
OWNER_NAME: Final = "OWNER_NAME"
EVENTS_PORT: Final = "EVENTS_PORT"
RAY_ENABLE_RAY_EVENT: Final = "RAY_enable_ray_event"
RAY_ENABLE_CORE_WORKER_RAY_EVENT_TO_AGGREGATOR: Final = "RAY_enable_core_worker_ray_event_to_aggregator"
RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR: Final = "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR"
RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES: Final = (
    "RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES"
)
RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES: Final = (
    "RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES"
)
DEFAULT_RAY_EXPOSABLE_EVENT_TYPES: Final = (
    "TASK_DEFINITION_EVENT,TASK_LIFECYCLE_EVENT,ACTOR_TASK_DEFINITION_EVENT,TASK_PROFILE_EVENT,"
    "DRIVER_JOB_DEFINITION_EVENT,DRIVER_JOB_LIFECYCLE_EVENT,ACTOR_DEFINITION_EVENT,ACTOR_LIFECYCLE_EVENT,"
    "NODE_DEFINITION_EVENT,NODE_LIFECYCLE_EVENT"
)

# --- Environment variables of the operator process ----------------------------------------------------------
CLUSTER_DOMAIN: Final = "CLUSTER_DOMAIN"
ENABLE_WEBHOOKS: Final = "ENABLE_WEBHOOKS"
ENABLE_RANDOM_POD_DELETE: Final = "ENABLE_RANDOM_POD_DELETE"
ENABLE_GCS_FT_REDIS_CLEANUP: Final = "ENABLE_GCS_FT_REDIS_CLEANUP"
ENABLE_PROBES_INJECTION: Final = "ENABLE_PROBES_INJECTION"
USE_INGRESS_ON_OPENSHIFT: Final = "USE_INGRESS_ON_OPENSHIFT"
ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE: Final = "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE"
ENABLE_LOGIN_SHELL: Final = "ENABLE_LOGIN_SHELL"
ENABLE_DETERMINISTIC_HEAD_POD_NAME: Final = "ENABLE_DETERMINISTIC_HEAD_POD_NAME"
DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: Final = "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES"
RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV: Final = "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV"
RAYCLUSTER_DEFAULT_REQUEUE_SECONDS: Final = 300
RAYCLUSTER_GCS_FT_DELETION_TIMEOUT_DEFAULT: Final = 300
RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS: Final = (
    "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS"
)
DEFAULT_RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS: Final = 300
RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS: Final = "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS"
DEFAULT_RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS: Final = 300

# --- Environment variables of the history-server collector (storage backends) ------------------------------
STORAGE_BACKEND: Final = "STORAGE_BACKEND"
GCS_BUCKET: Final = "GCS_BUCKET"
S3_REGION: Final = "S3_REGION"
AZURE_STORAGE_AUTH_MODE: Final = "AZURE_STORAGE_AUTH_MODE"
AZURE_STORAGE_CONNECTION_STRING: Final = "AZURE_STORAGE_CONNECTION_STRING"
AZURE_STORAGE_ACCOUNT_URL: Final = "AZURE_STORAGE_ACCOUNT_URL"
ALIYUN_OSS_BUCKET: Final = "OSS_BUCKET"
ALIYUN_OSS_ENDPOINT: Final = "OSS_ENDPOINT"
ALIYUN_OSS_REGION: Final = "OSS_REGION"
