"""The KubeRay APIServer: compute templates, clusters, jobs, job submissions and Ray services as gRPC and
REST calls (upstream's v1 API, its messages compiled from `proto/`), and apiserversdk's v2 proxy."""
