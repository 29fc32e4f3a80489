package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// runEtcd runs a single-member etcd (the etcd server module Kubernetes itself is built against)
// until SIGTERM/SIGINT. Only the supervisor starts it, always on loopback addresses.
func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "etcd data directory (required)")
	clientURL := fs.String("listen-client-url", "", "client URL, e.g. http://127.0.0.1:2379 (required)")
	peerURL := fs.String("listen-peer-url", "", "peer URL, e.g. http://127.0.0.1:2380 (required)")
	noFsync := fs.Bool("unsafe-no-fsync", false, "skip fsync: only for throw-away test clusters")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := serveEtcd(*dataDir, *clientURL, *peerURL, *noFsync); err != nil {
		fmt.Fprintln(os.Stderr, "etcd:", err)
		return 1
	}
	return 0
}

func serveEtcd(dataDir, clientURL, peerURL string, noFsync bool) error {
	if dataDir == "" || clientURL == "" || peerURL == "" {
		return fmt.Errorf("--data-dir, --listen-client-url and --listen-peer-url are required")
	}
	client, err := url.Parse(clientURL)
	if err != nil {
		return fmt.Errorf("parse client URL: %w", err)
	}
	peer, err := url.Parse(peerURL)
	if err != nil {
		return fmt.Errorf("parse peer URL: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "localkube"
	cfg.Dir = dataDir
	cfg.LogLevel = "warn"
	cfg.UnsafeNoFsync = noFsync
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Kubernetes compacts etcd itself (--etcd-compaction-interval); keep the keyspace history
	// bounded anyway so a long-lived dev cluster does not grow its database without limit.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1h"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("not ready after 2m")
	}
	fmt.Fprintln(os.Stderr, "etcd: ready, serving", clientURL)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case sig := <-stop:
		fmt.Fprintln(os.Stderr, "etcd: stopping on", sig)
		return nil
	case err := <-e.Err():
		return fmt.Errorf("server failed: %w", err)
	}
}
