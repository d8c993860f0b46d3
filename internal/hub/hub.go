// Package hub runs an embedded NATS server with JetStream: the server of
// a swarm on one machine (hive hub), and of the swarm's tests.
package hub

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultAddr is where a hub listens unless told otherwise: loopback, the
// NATS port.
const DefaultAddr = "127.0.0.1:4222"

// Options configure a Hub.
type Options struct {
	// Dir holds JetStream's store (the swarm's directory and notices);
	// they survive a restart of the hub. Required.
	Dir string
	// Addr is host:port to listen on; port 0 picks a free one. If empty,
	// DefaultAddr.
	Addr string
	// Token, if set, is required of every client.
	Token string
	// Name is the server's name; if empty, "hive-hub".
	Name string
}

// Hub is a running embedded server. Close it.
type Hub struct {
	s *server.Server
}

// startTimeout bounds the wait for the server to take connections.
const startTimeout = 10 * time.Second

// Start starts the server and returns once it takes connections.
func Start(o Options) (*Hub, error) {
	if o.Dir == "" {
		return nil, errors.New("hub: the store's directory is required")
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if o.Name == "" {
		o.Name = "hive-hub"
	}
	host, p, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", o.Addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("--listen %q: the port must be 0-65535", o.Addr)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	s, err := server.NewServer(&server.Options{ServerName: o.Name, Host: host, Port: port,
		JetStream: true, StoreDir: o.Dir, NoSigs: true, Authorization: o.Token})
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	s.Start() // returns at once; the server's goroutines end with Shutdown
	if !s.ReadyForConnections(startTimeout) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("hub: the server on %s did not take connections within %v (is the port taken?)", o.Addr, startTimeout)
	}
	return &Hub{s: s}, nil
}

// URL is the URL clients connect to (nats://host:port).
func (h *Hub) URL() string { return h.s.ClientURL() }

// Close stops the server and returns once it has stopped.
func (h *Hub) Close() {
	h.s.Shutdown()
	h.s.WaitForShutdown()
}
