// Command pause is the process that holds a pod's namespaces open for the kubelet (the "sandbox" image),
// written for this project so that no registry is needed. It does nothing but wait: it reaps every child
// that dies (as PID 1 of the pod's PID namespace it inherits orphans) and exits 0 when asked to stop.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		// One SIGCHLD may stand for several dead children: collect them all without blocking.
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
