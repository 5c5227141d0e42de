package main

import (
	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/cmd/ferry/internal/tandemcli"
	"github.com/ferry-sync/ferry/cmd/ferry/internal/webapp"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ferry",
		Short:         "Local-first, end-to-end-encrypted sync",
		Long:          "Ferry keeps replicas in sync through hubs they don't trust: Tandem collections over a mail account, an Evolu relay and client, and DATA_V1 document replication.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetVersionTemplate("ferry {{.Version}}\n")
	root.AddCommand(newVersionCmd())
	root.AddCommand(newRelayCmd())
	root.AddCommand(newEvoluCmd())
	root.AddCommand(newDemoCmd())
	root.AddCommand(newPeerCmd())
	tandemcli.Register(root, tandemcli.Config{}) // init, connect, new, add, sync, ... (Tandem lists)
	root.AddCommand(webapp.Command(webapp.Config{}))
	// Subsystems register their commands here, one line each.
	return root
}
