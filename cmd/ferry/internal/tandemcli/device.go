package tandemcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-sync/ferry/tandem"
)

func (a *app) deviceCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "device",
		GroupID: groupSetup,
		Short:   "Add another device of yours with a QR code and a six-digit code",
		Args:    args(1, 1, "device add|join"),
		RunE: func(c *cobra.Command, as []string) error {
			return usagef("unknown device command %q: use ferry device add or ferry device join", as[0])
		},
	}
	c.AddCommand(a.deviceAddCmd(), a.deviceJoinCmd())
	return c
}

// sixDigits shows a pairing code as §6.3 does: "483 920".
func sixDigits(code string) string {
	if len(code) == 6 {
		return code[:3] + " " + code[3:]
	}
	return code
}

func (a *app) deviceAddCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "add",
		Example: "  ferry device add            # then, on the new device: ferry device join CODE",
		Short:   "Show a QR code for 2 minutes; approve the new device when its code matches",
		Long: `Add a device: shows a QR code (and its text) for two minutes. The code
holds the mail account's password, so ferry asks first (--yes: don't ask).
On the new device run ferry device join with it; it shows a six-digit code.
Here ferry asks "Add 'NAME'? Code 483 920": answer y only if the codes
match. Other ferry commands on this profile keep working meanwhile.`,
		Args: args(0, 0, "device add"),
		RunE: func(c *cobra.Command, _ []string) error {
			s, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer s.close()
			h := s.dev.Hub()
			if h.IsZero() {
				return failf("no_hub", "this device is not connected to a mail account yet: run ferry connect")
			}
			if !a.confirm(c, "The code holds the password of "+h.String()+": anyone who sees it can read and change this mailbox, and be you. Show it?") {
				return failf("declined", "not shown (answer y to show it)")
			}
			offer, err := s.dev.AddDevice(c.Context())
			if err != nil {
				return err
			}
			// The offer has its own connection and a copy of the identity:
			// the device steps aside for the two minutes, so other ferry
			// commands on this profile work meanwhile.
			s.dev.Close()
			s.dev = nil
			defer func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context()), 10*time.Second)
				defer cancel()
				offer.Close(ctx)
			}()
			w := c.OutOrStdout()
			if a.json {
				emit(w, map[string]any{"payload": offer.Payload(), "expires": offer.Expires().UTC()})
			} else {
				printQR(w, offer.Payload())
				fmt.Fprintf(w, "\n%s\n\nOn the new device: ferry device join, with the text above. This code works for 2 minutes (until %s).\n",
					offer.Payload(), offer.Expires().Local().Format("15:04:05"))
			}
			return a.pairLoop(c, w, offer)
		},
	}
	c.Flags().BoolVarP(&a.yes, "yes", "y", false, "show the code without asking (the question about the new device is always asked)")
	return a.flags(c, true)
}

// pairLoop answers requests until one is approved or the offer expires.
func (a *app) pairLoop(c *cobra.Command, w io.Writer, offer *tandem.PairingOffer) error {
	stop := a.countdown(c, offer.Expires())
	defer stop()
	for {
		req, err := offer.Next(c.Context())
		if err != nil {
			switch {
			case c.Context().Err() != nil:
				return failf("interrupted", "stopped: no device was added")
			case tandem.CodeOf(err) == tandem.CodeExpired:
				return failf("expired", "no device was added before the code expired: ferry device add shows a new one")
			}
			return err
		}
		stop()
		if !a.confirmAlways(c, fmt.Sprintf("Add '%s'? Code %s", disp(req.Name()), sixDigits(req.Code()))) {
			told := req.Decline(c.Context()) == nil
			if a.json {
				emit(w, map[string]any{"declined": req.Name(), "code": req.Code(), "told": told})
			} else {
				said := "Not added."
				if !told {
					said = "Not added (the new device could not be told, so it waits until the code expires)."
				}
				fmt.Fprintf(w, "%s Waiting for another request until %s.\n", said, offer.Expires().Local().Format("15:04:05"))
			}
			stop = a.countdown(c, offer.Expires())
			continue
		}
		if err := req.Approve(c.Context()); err != nil {
			return err
		}
		if a.json {
			return emit(w, map[string]any{"added": req.Name(), "code": req.Code()})
		}
		fmt.Fprintf(w, "Added '%s'. Everything appears there at its first sync.\n", disp(req.Name()))
		return nil
	}
}

// confirmAlways asks even with --yes: adding a device hands over the identity.
func (a *app) confirmAlways(c *cobra.Command, q string) bool {
	yes := a.yes
	a.yes = false
	defer func() { a.yes = yes }()
	return a.confirm(c, q)
}

// countdown shows the time left on a terminal's stderr; stop ends it.
func (a *app) countdown(c *cobra.Command, until time.Time) (stop func()) {
	w := a.stderr // raw: the line is redrawn in place
	if !isTerminal(w) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			left := time.Until(until).Round(time.Second)
			if left < 0 {
				left = 0
			}
			fmt.Fprintf(w, "\rWaiting for the new device: %d:%02d left ", int(left.Minutes()), int(left.Seconds())%60)
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
	var once bool
	return func() {
		if !once {
			once = true
			close(done)
			<-finished
		}
	}
}

func (a *app) deviceJoinCmd() *cobra.Command {
	var name, caFile string
	c := &cobra.Command{
		Use:   "join CODE",
		Short: "Become another device of the user who shows ferry device add (CODE is its text, - for standard input)",
		Long: `Join the identity another device shows with ferry device add, in an
empty profile. ferry shows a six-digit code: tell the other device to add
this one only if it shows the same code. The mail account comes with it.`,
		Args: args(1, 1, "device join CODE"),
		RunE: func(c *cobra.Command, as []string) error {
			name, err := a.userName(name)
			if err != nil {
				return err
			}
			payload := as[0]
			if payload == "-" {
				payload = readLine(c.InOrStdin(), maxDescriptor)
			}
			if dir, _, err := a.profileDir(); err != nil {
				return err
			} else if _, err := os.Stat(filepath.Join(dir, profileFile)); err == nil {
				return failf("exists", "%s already holds a device: join from another --profile", dir)
			}
			var t *trust
			if caFile != "" {
				if t, err = readTrust(caFile); err != nil {
					return err
				}
			}
			dir, undo, err := a.createProfile()
			if err != nil {
				return err
			}
			s := &session{dir: dir, prof: profileJSON{Version: 1, Name: name}, trust: t}
			s.log = openLog(dir)
			defer s.close()
			dev, err := a.pairJoin(c, s, payload)
			if err != nil {
				s.closeLog()
				undo()
				return err
			}
			s.dev = dev
			if err := keepTrust(dir, t); err != nil {
				return err
			}
			if err := writeJSON(filepath.Join(dir, profileFile), s.prof); err != nil {
				return err
			}
			rep, serr := a.syncOnce(c.Context(), s, syncTimeout)
			if a.json {
				id := dev.DeviceID()
				if err := emit(c.OutOrStdout(), map[string]any{"profile": dir, "name": name, "user": dev.UserID().String(), "device": fmt.Sprintf("%x", id[:]), "hub": dev.Hub().String(), "sync": reportJSON(rep)}); err != nil {
					return err
				}
				return serr
			}
			fmt.Fprintf(c.OutOrStdout(), "This device is added, syncing through %s.\n", dev.Hub())
			if serr == nil {
				fmt.Fprintf(c.OutOrStdout(), "Synced: %s.\n", describeReport(rep))
			}
			return serr
		},
	}
	c.Flags().StringVar(&name, "name", "", "the name the other device sees in its question (default: your login name)")
	c.Flags().StringVar(&caFile, "ca-file", "", caFileHelp)
	return a.flags(c, true)
}

// pairJoin posts the request, shows the code and waits for the approval.
func (a *app) pairJoin(c *cobra.Command, s *session, payload string) (*tandem.Device, error) {
	ctx := c.Context()
	j, err := tandem.JoinDevice(ctx, filepath.Join(s.dir, deviceDir), payload, tandem.Options{Name: s.prof.Name, Logger: s.logger(), RootCAs: s.trust.roots()})
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		j.Close(cctx)
	}()
	code, err := j.Code(ctx)
	if err != nil {
		return nil, pairErr(ctx, err)
	}
	if a.json {
		emit(c.OutOrStdout(), map[string]any{"code": code, "expires": j.Expires().UTC()})
	} else {
		fmt.Fprintf(c.OutOrStdout(), "Code %s\nAdd this device on the other one only if it shows the same code.\n", sixDigits(code))
	}
	d, err := j.Device(ctx)
	if tandem.CodeOf(err) == tandem.CodeExpired && ctx.Err() == nil {
		// The code was shown: either nobody answered or the other device said no.
		return nil, failf("expired", "this device was not added: the other device did not approve it before the code expired (ferry device add there shows a new code)")
	}
	if err != nil {
		return nil, pairErr(ctx, err)
	}
	return d, nil
}

func pairErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return failf("interrupted", "stopped: this device was not added")
	}
	return err
}
