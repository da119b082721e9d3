module kuberay.invalid/pause

go 1.22
