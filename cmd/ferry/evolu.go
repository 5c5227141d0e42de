package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/evolu/client"
)

// newEvoluCmd is "ferry evolu": an Evolu client.
func newEvoluCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "evolu",
		Short: "Evolu client: sync an owner with a relay, write and read rows",
	}
	cmd.AddCommand(newEvoluSyncCmd(), newEvoluPutCmd(), newEvoluRowsCmd(), newEvoluSecretCmd())
	return cmd
}

type evoluFlags struct {
	secret, db string
	json       bool
}

func (f *evoluFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.secret, "secret", "", "owner secret: 64 hex digits or Evolu's 24-word mnemonic (required)")
	cmd.Flags().StringVar(&f.db, "db", "client.db", "client SQLite database file")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	_ = cmd.MarkFlagRequired("secret")
}

// open parses the secret and opens the client database; a read command
// (mustExist) refuses a database that does not exist instead of creating
// it.
func (f *evoluFlags) open(cmd *cobra.Command, mustExist bool) (client.Owner, *client.Store, error) {
	sec, err := client.ParseSecret(f.secret)
	if err != nil {
		return client.Owner{}, nil, fmt.Errorf("--secret: %s", strings.TrimPrefix(err.Error(), "evolu: "))
	}
	o := client.OwnerFromSecret(sec)
	open := client.OpenStore
	if mustExist {
		open = client.OpenExistingStore
	}
	st, err := open(cmd.Context(), f.db)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return o, nil, fmt.Errorf("no client database %s: check --db (put and sync create one)", f.db)
	case errors.Is(err, client.ErrWrongDatabase):
		return o, nil, innermost(err, client.ErrWrongDatabase)
	case err != nil:
		return o, nil, err
	}
	st.AddOwner(o)
	return o, st, nil
}

func newEvoluSyncCmd() *cobra.Command {
	var f evoluFlags
	var relayURL string
	var watch bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Sync one owner's changes with a relay and print what moved",
		Long: `Sync one owner's changes with a relay and print what moved. With --watch it
stays connected: it applies the relay's broadcasts as they come and reconnects
after failures, until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, st, err := f.open(cmd, false)
			if err != nil {
				return err
			}
			defer st.Close()
			out := cmd.OutOrStdout()
			report := func(rep client.SyncReport) error {
				if f.json {
					return json.NewEncoder(out).Encode(syncReportJSON(rep))
				}
				_, err := fmt.Fprintf(out, "owner %s: sent %d, received %d changes in %d rounds (%d bytes out, %d in): %s\n",
					rep.Owner, rep.Sent, rep.Received, rep.Rounds, rep.BytesSent, rep.BytesReceived, rep.Outcome)
				return err
			}
			if watch {
				return client.Run(cmd.Context(), relayURL, o, st, client.RunOptions{
					OnSync: func(rep client.SyncReport) { _ = report(rep) },
					OnBroadcast: func(n int) {
						if f.json {
							_ = json.NewEncoder(out).Encode(map[string]any{"ownerId": o.ID().String(), "broadcast": n})
						} else {
							fmt.Fprintf(out, "owner %s: received %d changes by broadcast\n", o.ID(), n)
						}
					},
					Logger:      slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
					SyncOptions: client.SyncOptions{ReplyTimeout: timeout},
				})
			}
			rep, err := client.Sync(cmd.Context(), relayURL, o, st, client.SyncOptions{ReplyTimeout: timeout})
			if re := (*client.RelayError)(nil); errors.As(err, &re) && re.Code == client.RelayNoReply {
				return fmt.Errorf("the relay at %s sent no reply within %s: is it an Evolu protocol v1 relay? (a relay does not answer a request it cannot decode)", relayURL, timeout)
			}
			if err != nil {
				return err
			}
			return report(rep)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&relayURL, "relay", "ws://127.0.0.1:4000", "relay WebSocket URL")
	cmd.Flags().BoolVar(&watch, "watch", false, "stay connected and apply changes as they come")
	cmd.Flags().DurationVar(&timeout, "timeout", client.DefaultReplyTimeout, "how long to wait for each reply of the relay")
	return cmd
}

// parseColumn reads name=text (a string) or name:=JSON (a number, a
// string, or null).
func parseColumn(arg string) (client.Column, error) {
	if name, raw, ok := strings.Cut(arg, ":="); ok && name != "" {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return client.Column{}, fmt.Errorf("%s: %w", arg, err)
		}
		switch v.(type) {
		case nil, float64, string:
			return client.Column{Name: name, Value: v}, nil
		}
		return client.Column{}, fmt.Errorf("%s: a value is a number, a string or null", arg)
	}
	if name, text, ok := strings.Cut(arg, "="); ok && name != "" {
		return client.Column{Name: name, Value: text}, nil
	}
	return client.Column{}, fmt.Errorf("%q: want name=text or name:=JSON", arg)
}

func newEvoluPutCmd() *cobra.Command {
	var f evoluFlags
	var table, id string
	var del bool
	cmd := &cobra.Command{
		Use:   "put name=text name:=JSON ...",
		Short: "Write a row change (encrypted, sent by the next sync)",
		Example: `  ferry evolu put --secret $SECRET --table todo title="Buy milk" done:=0
  ferry evolu put --secret $SECRET --table todo --id AAAAAAAAAAAAAAAAAAAAAA --delete`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if table == "" {
				return errors.New("--table is required")
			}
			if del && id == "" {
				return errors.New("--delete needs --id: the id of the row to delete")
			}
			c := client.DbChange{Table: table}
			if id == "" {
				if _, err := io.ReadFull(rand.Reader, c.ID[:]); err != nil {
					return err
				}
				c.IsInsert = true
			} else {
				var err error
				if c.ID, err = client.ParseID(id); err != nil {
					return err
				}
			}
			if del {
				c.IsDelete = &del
			}
			for _, a := range args {
				col, err := parseColumn(a)
				if err != nil {
					return err
				}
				c.Values = append(c.Values, col)
			}
			if len(c.Values) == 0 && c.IsDelete == nil {
				return errors.New("nothing to write: give columns or --delete")
			}
			o, st, err := f.open(cmd, false)
			if err != nil {
				return err
			}
			defer st.Close()
			ts, err := st.Put(cmd.Context(), o, c)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				return json.NewEncoder(out).Encode(map[string]any{"table": table, "id": c.ID.String(), "timestamp": ts.String()})
			}
			_, err = fmt.Fprintf(out, "%s %s at %s\n", table, c.ID, ts)
			return err
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&table, "table", "", "table name (required)")
	cmd.Flags().StringVar(&id, "id", "", "row id (22 base64url characters); new random id when empty")
	cmd.Flags().BoolVar(&del, "delete", false, "mark the row deleted")
	return cmd
}

func newEvoluRowsCmd() *cobra.Command {
	var f evoluFlags
	var table string
	cmd := &cobra.Command{
		Use:   "rows",
		Short: "Print the rows made by the owner's decrypted changes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, st, err := f.open(cmd, true)
			if err != nil {
				return err
			}
			defer st.Close()
			has, err := st.HasChanges(cmd.Context(), o.ID())
			if err != nil {
				return err
			}
			if !has {
				return fmt.Errorf("owner %s has no rows in %s: a different secret, or not synced to this device yet (ferry evolu sync)", o.ID(), f.db)
			}
			rows, err := st.Rows(cmd.Context(), o.ID(), table)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				js := make([]map[string]any, 0, len(rows))
				for _, r := range rows {
					cols := map[string]any{}
					for _, c := range r.Columns {
						if b, ok := c.Value.([]byte); ok {
							c.Value = hex.EncodeToString(b)
						}
						cols[c.Name] = c.Value
					}
					js = append(js, map[string]any{"table": r.Table, "id": r.ID.String(), "values": cols})
				}
				return json.NewEncoder(out).Encode(js)
			}
			for _, r := range rows {
				var parts []string
				for _, c := range r.Columns {
					parts = append(parts, fmt.Sprintf("%s=%s", c.Name, formatValue(c.Value)))
				}
				if _, err := fmt.Fprintf(out, "%s %s %s\n", r.Table, r.ID, strings.Join(parts, " ")); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&table, "table", "", "only this table")
	return cmd
}

func formatValue(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case []byte:
		return "0x" + hex.EncodeToString(t)
	case string:
		b, _ := json.Marshal(t)
		return string(b)
	}
	return fmt.Sprint(v)
}

func newEvoluSecretCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "new-secret",
		Short: "Print a new random owner secret (hex and Evolu's mnemonic) and its OwnerId",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var s client.Secret
			if _, err := io.ReadFull(rand.Reader, s[:]); err != nil {
				return err
			}
			id := client.OwnerFromSecret(s).ID()
			out := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(out).Encode(map[string]string{"secret": s.String(), "mnemonic": s.Mnemonic(), "ownerId": id.String()})
			}
			_, err := fmt.Fprintf(out, "secret %s\nmnemonic %s\nownerId %s\n", s, s.Mnemonic(), id)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// evoluSyncJSON is the --json form of one sync (the field names the CLI has
// always printed; the library's SyncReport carries no JSON shape).
type evoluSyncJSON struct {
	Owner         string `json:"ownerId"`
	Rounds        int    `json:"rounds"`
	Sent          int    `json:"sent"`
	Received      int    `json:"received"`
	BytesSent     int64  `json:"bytesSent"`
	BytesReceived int64  `json:"bytesReceived"`
	Outcome       string `json:"outcome"`
	TooLarge      int    `json:"tooLarge"`
}

func syncReportJSON(r client.SyncReport) evoluSyncJSON {
	return evoluSyncJSON{Owner: r.Owner.String(), Rounds: r.Rounds, Sent: r.Sent, Received: r.Received,
		BytesSent: r.BytesSent, BytesReceived: r.BytesReceived, Outcome: r.Outcome, TooLarge: r.TooLarge}
}
