package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time with -ldflags "-X main.version=..."; when it is
// empty the module version recorded by the Go toolchain is shown.
var version = ""

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ferry",
		Short:         "Local-first, end-to-end-encrypted sync",
		Long:          "Ferry keeps replicas in sync through hubs they don't trust: Tandem collections over a mail account, an Evolu relay and client, and DATA_V1 document replication.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCmd())
	root.AddCommand(newRelayCmd())
	root.AddCommand(newEvoluCmd())
	root.AddCommand(newDemoCmd())
	root.AddCommand(newPeerCmd())
	// Subsystems register their commands here, one line each.
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Ferry's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "ferry", buildVersion())
			return err
		},
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
