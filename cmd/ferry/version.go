package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at link time with -ldflags "-X main.version=..."; when it is
// empty the module version recorded by the Go toolchain is shown.
var version = ""

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Ferry's version, and the VCS revision it was built from when the build recorded one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "ferry", versionString())
			return err
		},
	}
}

// versionString is this binary's version.
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return describeBuild(version, bi)
}

// describeBuild is the version line: the link-time version or else the
// module version, then the VCS revision, its time and whether the tree was
// modified, when the build info records them ("v1.2.0 (rev 0123456789ab,
// 2026-12-01T16:00:00Z, modified)"). Without a module version (go run, go
// test) the version reads "devel".
func describeBuild(linked string, bi *debug.BuildInfo) string {
	v := linked
	settings := map[string]string{}
	if bi != nil {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var parts []string
	if rev := settings["vcs.revision"]; rev != "" {
		parts = append(parts, "rev "+rev[:min(12, len(rev))])
	}
	if t := settings["vcs.time"]; t != "" {
		parts = append(parts, t)
	}
	if settings["vcs.modified"] == "true" {
		parts = append(parts, "modified")
	}
	if bi != nil && bi.GoVersion != "" {
		parts = append(parts, bi.GoVersion)
	}
	if len(parts) == 0 {
		return v
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}
