package main

import (
	"fmt"
	"net"
	"strconv"
)

// portUse names one TCP port the cluster will listen on, for a clear error when it is taken.
type portUse struct {
	port      int
	component string
}

// freeLoopbackPort asks the kernel for an unused port on 127.0.0.1. There is a small window
// before the component binds it; the harness only uses this in fresh, private state dirs.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// checkPortsFree fails with an error naming the first port some other process holds. It binds
// the wildcard address, which conflicts with a listener on any local address of that port.
func checkPortsFree(ports []portUse) error {
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(p.port)))
		if err != nil {
			return fmt.Errorf("port %d (needed by %s) is already in use: stop whatever listens there "+
				"(`ss -ltnp 'sport = :%d'` shows it) or choose another port: %w", p.port, p.component, p.port, err)
		}
		if err := l.Close(); err != nil {
			return fmt.Errorf("release port %d after checking it: %w", p.port, err)
		}
	}
	return nil
}
