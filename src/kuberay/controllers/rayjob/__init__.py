"""The RayJob controller: make (or pick) a RayCluster, submit the job, watch it, clean up.

- `state`: the pure state machine (JobDeploymentStatus transitions and the actions they need);
- `decision`: what the state machine reads (facts, settings) and returns (the decision, its actions);
- `deletion`: the pure post-completion cleanup decision (shutdownAfterJobFinishes, deletion policies, rules);
- `cluster`: the RayCluster a RayJob creates, its dashboard address, and why it may not start;
- `submitter`: what the K8sJobMode Job or the SidecarMode container says about the submission;
- `poller`: job-status polling (and HTTPMode submission) in its own bounded worker pool;
- `reconciler`: gathers facts from the caches and the poller, performs the actions, writes status;
- `metrics`: the kuberay_job_* metrics; `setup`: the ControllerSetup the operator installs.
"""
