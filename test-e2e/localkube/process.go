package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// child is one supervised component process; its output goes to logs/<name>.log.
type child struct {
	name string
	path string   // the program and its arguments, kept so the supervisor can start
	args []string // the same command again (restart.go)
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // exit error, valid after done is closed
}

// startChild starts path with args, logging to logDir/<name>.log (appended, so restarts keep the
// history). The child gets SIGTERM if the supervisor dies, so a killed supervisor does not leave
// an orphaned API server holding the port.
func startChild(name, logDir, path string, args ...string) (*child, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", logPath, err)
	}
	fmt.Fprintf(logFile, "\n==== %s: %s %v\n", time.Now().Format(time.RFC3339), path, args)
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, path: path, args: args, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		_ = logFile.Close()
		close(c.done)
	}()
	return c, nil
}

// exited reports whether the process has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs. It returns once the process is gone.
func (c *child) stop(grace time.Duration) error {
	if c.exited() {
		return nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s: %w", c.name, err)
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	logf("%s did not stop within %s; killing it", c.name, grace)
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s: %w", c.name, err)
	}
	<-c.done
	return nil
}

// logf prints a supervisor progress line; `make cluster-up` shows these while it waits.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[localkube %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
