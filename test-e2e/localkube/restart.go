package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// Supervised restarts. The control-plane components that keep no state of their own (everything
// is in etcd) are restarted when they exit, as a kubelet restarts a static Pod: a control-plane
// upgrade or a crash restarts the API server under running clients, and the platform's operator
// and gateway must ride that out, so the local cluster has to survive it too (issue 12's chaos
// test kills the API server with SIGKILL). Every other component still stops the whole cluster
// when it exits (fail fast: etcd, containerd or the kubelet dying is a broken node, not a test).
var restartable = map[string]bool{
	"kube-apiserver":          true,
	"kube-controller-manager": true,
	"kube-scheduler":          true,
	// The snapshot object store keeps its data on disk (s3.go); a chaos test may kill it.
	objectStoreComponent: true,
}

// restartableNames lists the restartable components, sorted (run/state.json).
func restartableNames() []string {
	names := make([]string, 0, len(restartable))
	for name := range restartable {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

const (
	// restartDelay is the pause before a restart: the kernel releases the dead process's ports
	// and a component that dies at start-up does not spin.
	restartDelay = time.Second
	// restartLimit restarts of one component within restartWindow are allowed; one more stops
	// the cluster (a component in a crash loop is a bug to see, not to hide).
	restartLimit  = 5
	restartWindow = 10 * time.Minute
)

// restartBudget counts one component's recent restarts.
type restartBudget struct {
	limit  int
	window time.Duration
	times  []time.Time
}

// take records a restart at now and reports whether it is within the budget.
func (b *restartBudget) take(now time.Time) bool {
	kept := b.times[:0]
	for _, t := range b.times {
		if now.Sub(t) < b.window {
			kept = append(kept, t)
		}
	}
	b.times = kept
	if len(b.times) >= b.limit {
		return false
	}
	b.times = append(b.times, now)
	return true
}

// componentPidFile is run/<name>.pid: a component's current pid (every component has one; a
// restart rewrites it), so tests and people can find (and kill) this state dir's component.
func componentPidFile(runDir, name string) string { return filepath.Join(runDir, name+".pid") }

func writeComponentPid(runDir string, ch *child) error {
	if runDir == "" {
		return nil
	}
	return writeFileAtomic(componentPidFile(runDir, ch.name), []byte(strconv.Itoa(ch.cmd.Process.Pid)+"\n"), 0o644)
}

// restartChild starts ch's command again in ch's place (same position, so shutdown order holds).
func (c *cluster) restartChild(ch *child) (*child, error) {
	next, err := startChild(ch.name, c.logDir, ch.path, ch.args...)
	if err != nil {
		return nil, err
	}
	for i, old := range c.children {
		if old == ch {
			c.children[i] = next
		}
	}
	if err := writeComponentPid(c.runDir, next); err != nil {
		return next, err
	}
	return next, nil
}

// runUntilStopped blocks until a signal arrives (clean stop) or a component exits. A restartable
// component is started again (within its budget); any other exit is an error: a half-running
// cluster would only produce confusing test failures.
func (c *cluster) runUntilStopped(stop <-chan os.Signal) error {
	died := make(chan *child, len(c.children))
	watch := func(ch *child) { go func() { <-ch.done; died <- ch }() }
	for _, ch := range c.children {
		watch(ch)
	}
	budgets := map[string]*restartBudget{}
	delay := c.restartDelay
	if delay == 0 {
		delay = restartDelay
	}
	for {
		select {
		case sig := <-stop:
			logf("received %s; stopping the cluster", sig)
			return nil
		case ch := <-died:
			log := filepath.Join(c.logDir, ch.name+".log")
			if !restartable[ch.name] {
				return fmt.Errorf("%s exited unexpectedly (%v); see %s", ch.name, ch.err, log)
			}
			b := budgets[ch.name]
			if b == nil {
				b = &restartBudget{limit: restartLimit, window: restartWindow}
				budgets[ch.name] = b
			}
			if !b.take(time.Now()) {
				return fmt.Errorf("%s exited (%v) after %d restarts within %s; see %s",
					ch.name, ch.err, b.limit, b.window, log)
			}
			logf("%s exited (%v); restarting it in %s (restart %d of %d allowed within %s)",
				ch.name, ch.err, delay, len(b.times), b.limit, b.window)
			select {
			case sig := <-stop:
				logf("received %s; stopping the cluster", sig)
				return nil
			case <-time.After(delay):
			}
			next, err := c.restartChild(ch)
			if err != nil {
				return fmt.Errorf("restart %s: %w", ch.name, err)
			}
			logf("%s restarted (pid %d)", ch.name, next.cmd.Process.Pid)
			watch(next)
		}
	}
}
