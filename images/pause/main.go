// Command pause is the pod sandbox's first process: it holds the pod's namespaces open and does nothing
// else. PID 1 of a pod that shares its process namespace must also reap orphans, and must exit on the
// signals the runtime stops a sandbox with. Built statically (CGO_ENABLED=0) by scripts/build-images, so
// the image is this one file on an empty root filesystem; nothing is pulled.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("leviath pause")
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "warning: pause should be the first process (pid 1)")
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		switch sig {
		case syscall.SIGCHLD:
			reap()
		default:
			fmt.Fprintf(os.Stderr, "shutting down, got signal %v\n", sig)
			os.Exit(0)
		}
	}
}

// reap collects every exited child without blocking: one SIGCHLD may stand for several exits.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
