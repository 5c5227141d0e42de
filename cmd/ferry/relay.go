package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/evolu/relay"
)

// relayFlags are the flags of "ferry relay".
type relayFlags struct {
	addr, db, logLevel, logFormat string
	adminAddr, tlsCert, tlsKey    string
	allowOwners, quotaFile, quota string
	queueBytes                    int64
	maxSize, rangesMax            int
	maxConns, maxConnsPerAddr     int
	idleTimeout                   time.Duration
}

// newRelayCmd is "ferry relay": an Evolu relay over WebSocket.
func newRelayCmd() *cobra.Command {
	var f relayFlags
	cmd := &cobra.Command{
		Use:   "relay",
		Short: "Run an Evolu relay (WebSocket; SQLite or Postgres)",
		Long: `Run an Evolu Protocol v1 relay: clients connect to ws://ADDR?ownerId=…
(wss:// with --tls-cert and --tls-key) and sync their encrypted changes; the
relay stores them in an SQLite file (one relay process per file) or in a
Postgres database (--db postgres://…, any number of relay processes).
--admin-addr serves GET /healthz and Prometheus /metrics. It stops gracefully
on SIGINT or SIGTERM. Deployment: docs/relay.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRelay(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:4000", "TCP address to listen on")
	fl.StringVar(&f.db, "db", "relay.db", "SQLite database file, or a postgres:// URL")
	fl.StringVar(&f.quota, "quota-bytes", "0", "most change bytes one owner may store, like 50M (0: unlimited); --quota-file overrides it")
	fl.StringVar(&f.quotaFile, "quota-file", "", `per-owner quotas: lines "OWNER_ID BYTES" and "* BYTES" (the default); suffixes k, M, G`)
	fl.StringVar(&f.allowOwners, "allow-owners", "", "file of the OwnerIds allowed to connect, one a line (others get 401)")
	fl.IntVar(&f.maxSize, "max-size", 1_000_000, "ProtocolMessageMaxSize in bytes (1 MB to 100 MB)")
	fl.IntVar(&f.rangesMax, "ranges-max-size", 30_000, "ProtocolMessageRangesMaxSize in bytes (3 KB to 100 KB)")
	fl.Int64Var(&f.queueBytes, "queue-bytes", relay.DefaultQueueBytes, "outgoing bytes one connection may have queued before it is closed")
	fl.IntVar(&f.maxConns, "max-conns", relay.DefaultMaxConns, "most open connections")
	fl.IntVar(&f.maxConnsPerAddr, "max-conns-per-addr", relay.DefaultMaxConnsPerAddr, "most open connections from one IP address (-1: unlimited, behind a reverse proxy)")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", relay.DefaultIdleTimeout, "close a connection that sent nothing for this long and is not subscribed")
	fl.StringVar(&f.adminAddr, "admin-addr", "", "address for GET /healthz and /metrics (keep it private)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (PEM); serves wss://")
	fl.StringVar(&f.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	cmd.AddCommand(newRelayOwnersCmd(), newRelayDeleteOwnerCmd())
	return cmd
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// relayConfig turns the flags into a relay.Config.
func (f relayFlags) config(log *slog.Logger) (relay.Config, error) {
	quota, err := parseBytes(f.quota)
	if err != nil {
		return relay.Config{}, fmt.Errorf("--quota-bytes: %w", err)
	}
	cfg := relay.Config{DBPath: f.db, QuotaBytes: quota, TotalMaxSize: f.maxSize, RangesMaxSize: f.rangesMax,
		QueueBytes: f.queueBytes, MaxConns: f.maxConns, MaxConnsPerAddr: f.maxConnsPerAddr, IdleTimeout: f.idleTimeout, Logger: log}
	if f.idleTimeout == 0 {
		cfg.IdleTimeout = -1
	}
	if f.quotaFile != "" {
		q, err := loadQuotaFile(f.quotaFile)
		if err != nil {
			return cfg, err
		}
		if q.def == 0 {
			q.def = quota
		}
		cfg.Quota = q.of
	}
	if f.allowOwners != "" {
		allowed, err := loadOwnerList(f.allowOwners)
		if err != nil {
			return cfg, err
		}
		cfg.IsOwnerAllowed = func(_ context.Context, o relay.OwnerID) (bool, error) { return allowed[o], nil }
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return cfg, errors.New("--tls-cert and --tls-key go together")
	}
	return cfg, nil
}

func runRelay(cmd *cobra.Command, f relayFlags) error {
	log, err := newLogger(cmd.ErrOrStderr(), f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	cfg, err := f.config(log)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	srv, err := relay.New(ctx, cfg)
	if err != nil {
		return relayError(err, f.db)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", f.addr, err)
	}
	scheme := "ws"
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "wss"
	}
	if f.adminAddr != "" {
		stop, addr, err := serveAdmin(ctx, f.adminAddr, srv.AdminHandler(), log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stop()
		fmt.Fprintf(cmd.OutOrStdout(), "ferry relay: admin on http://%s (/healthz, /metrics)\n", addr)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "ferry relay: listening on %s://%s (database %s)\n", scheme, ln.Addr(), redactDSN(f.db))
	return srv.Serve(ctx, ln)
}

// relayError is New's error in one line with its fix.
func relayError(err error, db string) error {
	switch {
	case errors.Is(err, relay.ErrDatabaseInUse):
		return fmt.Errorf("%s is in use by another relay process: stop it first (one relay process per SQLite file; for several, use a postgres:// database)", db)
	case errors.Is(err, relay.ErrWrongDatabase):
		return innermost(err, relay.ErrWrongDatabase)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no relay database %s: check --db", db)
	}
	return err
}

// serveAdmin serves h on addr until ctx is done or stop is called.
func serveAdmin(ctx context.Context, addr string, h http.Handler, log *slog.Logger) (stop func(), _ net.Addr, _ error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--admin-addr: cannot listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, ln.Addr(), nil
}

func newRelayOwnersCmd() *cobra.Command {
	var db string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "owners",
		Short: "List the owners a relay stores, with their changes and bytes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			us, err := relay.ListOwners(cmd.Context(), db)
			if err != nil {
				return relayError(err, db)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				type row struct {
					OwnerID     string `json:"ownerId"`
					Changes     int64  `json:"changes"`
					StoredBytes int64  `json:"storedBytes"`
					HasWriteKey bool   `json:"hasWriteKey"`
				}
				rows := make([]row, 0, len(us))
				for _, u := range us {
					rows = append(rows, row{u.OwnerID.String(), u.Changes, u.StoredBytes, u.HasWriteKey})
				}
				return json.NewEncoder(out).Encode(rows)
			}
			fmt.Fprintf(out, "%-22s %10s %14s\n", "OWNER", "CHANGES", "BYTES")
			for _, u := range us {
				fmt.Fprintf(out, "%-22s %10d %14d\n", u.OwnerID, u.Changes, u.StoredBytes)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", "relay.db", "SQLite database file (also while the relay runs), or a postgres:// URL")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newRelayDeleteOwnerCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "delete-owner OWNER_ID",
		Short: "Delete everything an owner stores in a relay, and its write key",
		Long: `Delete everything an owner stores in a relay, and its write key (its next
first write registers a new one). A SQLite database must not be in use by a
relay: stop it first. With Postgres the relays keep running.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := relay.ParseOwnerID(args[0])
			if err != nil {
				return fmt.Errorf("%q is not an OwnerId (22 base64url characters)", args[0])
			}
			ok, err := relay.DeleteOwner(cmd.Context(), db, o)
			if err != nil {
				if errors.Is(err, relay.ErrDatabaseInUse) {
					return fmt.Errorf("%s is in use by a running relay: stop it, then delete the owner", db)
				}
				return relayError(err, db)
			}
			if !ok {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "owner %s: nothing stored\n", o)
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "owner %s: deleted\n", o)
			return err
		},
	}
	cmd.Flags().StringVar(&db, "db", "relay.db", "SQLite database file, or a postgres:// URL")
	return cmd
}

// innermost is the deepest error in err's chain that still matches target:
// the one that says what is wrong, without the packages' prefixes.
func innermost(err, target error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil || !errors.Is(next, target) {
			return err
		}
		err = next
	}
}
