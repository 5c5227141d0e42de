package main

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/evolu/relay"
)

// newRelayCmd is "ferry relay": an Evolu relay over WebSocket.
func newRelayCmd() *cobra.Command {
	var (
		addr, db, logLevel string
		quota              int64
		maxSize, rangesMax int
	)
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Run an Evolu relay (WebSocket, SQLite)",
		Long: `Run an Evolu Protocol v1 relay: clients connect to ws://ADDR?ownerId=…
and sync their encrypted changes; the relay stores them in an SQLite file.
It stops gracefully on SIGINT or SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			ctx := cmd.Context()
			srv, err := relay.New(ctx, relay.Config{DBPath: db, QuotaBytes: quota, TotalMaxSize: maxSize, RangesMaxSize: rangesMax, Logger: log})
			if err != nil {
				return err
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ferry relay: listening on ws://%s (database %s)\n", ln.Addr(), db)
			return srv.Serve(ctx, ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:4000", "TCP address to listen on")
	f.StringVar(&db, "db", "relay.db", "SQLite database file")
	f.Int64Var(&quota, "quota-bytes", 0, "most change bytes one owner may store (0: unlimited)")
	f.IntVar(&maxSize, "max-size", 1_000_000, "ProtocolMessageMaxSize in bytes (1 MB to 100 MB)")
	f.IntVar(&rangesMax, "ranges-max-size", 30_000, "ProtocolMessageRangesMaxSize in bytes (3 KB to 100 KB)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	return cmd
}
