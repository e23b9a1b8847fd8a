// Command lingering-thread is an attack program of test/e2e/process-tree.test.ts (issue 41): its main thread exits
// while a second thread runs on, so /proc shows the process as a zombie (the thread group's leader) with an empty
// command line, while the other thread copies the file named first to the file named second ten times a second.
// Built statically (CGO_ENABLED=0) by the test, for the busybox sandbox image, which has no compiler.
package main

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		os.Stderr.WriteString("usage: lingering-thread FROM TO\n")
		os.Exit(2)
	}
	go func() {
		for {
			if b, err := os.ReadFile(os.Args[1]); err == nil {
				_ = os.WriteFile(os.Args[2], b, 0o600)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	// exit(2), not exit_group(2): only the calling thread, the group's leader, ends.
	runtime.LockOSThread()
	syscall.RawSyscall(syscall.SYS_EXIT, 0, 0, 0)
}
