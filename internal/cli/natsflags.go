package cli

import (
	"flag"

	"github.com/hivetools/hive/internal/swarm"
)

// natsFlags are the flags that reach a swarm's NATS server (hive daemon,
// hive swarm).
type natsFlags struct {
	url, swarm, creds, token, tlsCA *string
}

func addNATSFlags(fs *flag.FlagSet) natsFlags {
	return natsFlags{
		url:   fs.String("nats", "", "join a swarm over this NATS server (nats://HOST:4222; docs/swarm.md); with --swarm"),
		swarm: fs.String("swarm", "", "the swarm's name (letters, digits, _ -)"),
		creds: fs.String("nats-creds", "", "NATS credentials file (user JWT and nkey seed)"),
		token: fs.String("nats-token-file", "", "file holding the NATS server's token"),
		tlsCA: fs.String("nats-tls-ca", "", "PEM file of the CAs the NATS server's certificate chains to (default: the system's)"),
	}
}

// on tells whether a swarm is asked for.
func (n natsFlags) on() bool { return *n.url != "" || *n.swarm != "" }

func (n natsFlags) conn() swarm.Conn {
	return swarm.Conn{URL: *n.url, Swarm: *n.swarm, CredsFile: *n.creds, TokenFile: *n.token, TLSCA: *n.tlsCA}
}
