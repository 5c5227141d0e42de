package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/jmaphub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// demoFlags are the flags of "ferry demo".
type demoFlags struct {
	imap, jmap, user, pass string
	tls, json, keep        bool
	timeout                time.Duration
}

// newDemoCmd is "ferry demo": Ferry's main job on an embedded default.
func newDemoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Tell the whole Tandem story in a few seconds: two people, three devices, one shared list",
		Long: `Run Ferry's main job on an embedded default. Jesper keeps a list, "House",
on his phone; adds his laptop by pairing (the six-digit codes are compared);
shares the list with Aimee by QR code and with Ben, read-only, by link
(approved on his laptop); Jesper and Aimee edit offline and get a conflict;
Ben can't write; Jesper removes Aimee (the list gets a new key); a vandal
destroys the list's messages on the hub and Jesper's devices put them back.
Each step prints what each person sees; the run ends with checks and exits
non-zero if one fails.

The hub is in memory unless --imap or --jmap names a real mail account,
where the same story runs in its "Tandem" folder (use a dedicated account):
the messages the demo made are removed at the end, on an error and on
Ctrl-C (--keep keeps them). The password comes from --pass or from the
environment variable FERRY_DEMO_PASSWORD.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return runDemo(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.imap, "imap", "", "run against this IMAP server (host:port) instead of the in-memory hub")
	fl.StringVar(&f.jmap, "jmap", "", "run against this JMAP server (session URL, or its origin) instead of the in-memory hub")
	fl.StringVar(&f.user, "user", "", "mail account user name (with --imap or --jmap)")
	fl.StringVar(&f.pass, "pass", "", "mail account password (with --imap or --jmap; or FERRY_DEMO_PASSWORD)")
	fl.BoolVar(&f.tls, "tls", false, "with --imap: implicit TLS (port 993)")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	fl.BoolVar(&f.keep, "keep", false, "with --imap or --jmap: leave the demo's messages in the mail account")
	fl.DurationVar(&f.timeout, "timeout", 3*time.Minute, "give up after this long")
	return cmd
}

// demoHub is where the story's devices meet.
type demoHub struct {
	name string
	real bool       // a mail account: the demo removes its messages afterwards
	desc tandem.Hub // the descriptor devices use; zero for the in-memory hub
	open func(context.Context) (hub.Store, error)
}

// options returns the device options for one of the story's devices.
func (h demoHub) options(name string, log *slog.Logger) tandem.Options {
	o := tandem.Options{Name: name, Logger: log, Budget: hub.NewRateBudget(hub.Rate{}, hub.Rate{})}
	if h.real {
		o.Hub = h.desc
	} else {
		o.Store = h.open
	}
	return o
}

func chooseHub(f demoFlags) (demoHub, error) {
	if f.pass == "" {
		f.pass = os.Getenv("FERRY_DEMO_PASSWORD")
	}
	switch {
	case f.imap != "" && f.jmap != "":
		return demoHub{}, errors.New("--imap and --jmap exclude each other: choose one")
	case (f.imap != "" || f.jmap != "") && f.user == "":
		return demoHub{}, errors.New("--user is required with --imap or --jmap")
	case f.tls && f.imap == "":
		return demoHub{}, errors.New("--tls applies to --imap only")
	case f.imap != "":
		host, port, err := net.SplitHostPort(f.imap)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil || p < 1 || p > 65535 {
			return demoHub{}, fmt.Errorf("--imap wants host:port, like 127.0.0.1:1143 (got %q)", f.imap)
		}
		desc := tandem.IMAPHub(host, p, f.user, f.pass)
		cfg := imaphub.Config{Addr: f.imap, User: f.user, Password: f.pass, Dialer: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}
		if f.tls {
			desc = desc.WithSecurity("tls")
			cfg.Security = imaphub.ImplicitTLS
		}
		return demoHub{name: "imap " + f.imap, real: true, desc: desc, open: func(ctx context.Context) (hub.Store, error) {
			return imaphub.Open(ctx, cfg)
		}}, nil
	case f.jmap != "":
		u, err := url.Parse(f.jmap)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return demoHub{}, fmt.Errorf("--jmap wants an http(s) URL, like https://jmap.example.com (got %q)", f.jmap)
		}
		if u.Path == "" || u.Path == "/" { // a bare origin: the well-known session resource (RFC 8620 §2.2)
			u.Path = "/.well-known/jmap"
		}
		session := u.String()
		cfg := jmaphub.Config{SessionURL: session, Username: f.user, Password: f.pass}
		return demoHub{name: "jmap " + session, real: true, desc: tandem.JMAPBasicHub(session, f.user, f.pass), open: func(ctx context.Context) (hub.Store, error) {
			return jmaphub.Open(ctx, cfg)
		}}, nil
	}
	srv := memhub.NewServer()
	return demoHub{name: "memhub (in memory)", open: srv.Connect}, nil
}

func runDemo(ctx context.Context, stdout, stderr io.Writer, f demoFlags) error {
	h, err := chooseHub(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	res, err := demoStory(ctx, h, log, h.real && !f.keep)
	if err != nil {
		if os.Getenv("FERRY_DEMO_DEBUG") != "" {
			fmt.Fprintln(stderr, err)
		}
		return fmt.Errorf("demo on %s: %s", h.name, humanError(err))
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printDemo(stdout, res)
	}
	if !res.OK {
		return errors.New("demo: a check failed (see above)")
	}
	return nil
}

// humanError is one line for a person: a tandem.Error's message, or the
// last part of any other error chain.
func humanError(err error) string {
	var te *tandem.Error
	if errors.As(err, &te) {
		return te.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "it took longer than --timeout allows; is the server reachable?"
	}
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		s = s[i+2:]
	}
	return s
}

func printDemo(w io.Writer, res *demoResult) {
	fmt.Fprintf(w, "Ferry demo: two people, three devices, one shared list, through a Tandem hub\n")
	fmt.Fprintf(w, "  hub   %s\n  list  %s\n\n", res.Hub, res.Collection)
	for i, s := range res.Steps {
		fmt.Fprintf(w, "%2d. %s\n", i+1, s.Title)
		for _, line := range s.Sees {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
	fmt.Fprintln(w)
	for _, c := range res.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s %s\n", mark, c.Check)
	}
	if res.OK {
		fmt.Fprintln(w, "\nEveryone who should sees the same list; nothing was lost.")
	} else {
		fmt.Fprintln(w, "\nSomething did NOT go as it should.")
	}
}
