package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
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
		Short: "Keep a shared list in sync between two devices of one user (Tandem, in-memory hub)",
		Long: `Run Ferry's main job on an embedded default: one user with two devices keeps
a list, "Groceries", in sync through a Tandem hub (tandem.txt). Device A adds
items; device B, offline, edits concurrently (one concurrent assign to the same
field, a concurrent add/remove of a tag, a delete); both sync; each device's
merged list is printed and checked to be identical. Exits non-zero if not.

The hub is in memory unless --imap or --jmap names a real mail account, where
the very same scenario runs in its "Tandem" folder (use a dedicated account).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.imap, "imap", "", "run against this IMAP server (host:port) instead of the in-memory hub")
	fl.StringVar(&f.jmap, "jmap", "", "run against this JMAP session URL instead of the in-memory hub")
	fl.StringVar(&f.user, "user", "", "mail account user name (with --imap or --jmap)")
	fl.StringVar(&f.pass, "pass", "", "mail account password (with --imap or --jmap)")
	fl.BoolVar(&f.tls, "tls", false, "with --imap: implicit TLS (port 993)")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	fl.BoolVar(&f.keep, "keep", false, "with --imap or --jmap: leave the demo's messages in the mail account")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Minute, "give up after this long")
	return cmd
}

// demoHub opens one Store per device on the chosen hub.
type demoHub struct {
	name string
	real bool // a mail account: the demo removes its messages afterwards
	open func(context.Context) (hub.Store, error)
}

func chooseHub(f demoFlags) (demoHub, error) {
	switch {
	case f.imap != "" && f.jmap != "":
		return demoHub{}, errors.New("--imap and --jmap exclude each other")
	case (f.imap != "" || f.jmap != "") && f.user == "":
		return demoHub{}, errors.New("--user is required with --imap or --jmap")
	case f.imap != "":
		cfg := imaphub.Config{Addr: f.imap, User: f.user, Password: f.pass}
		if f.tls {
			host, _, err := net.SplitHostPort(f.imap)
			if err != nil {
				return demoHub{}, fmt.Errorf("--imap: %w", err)
			}
			cfg.TLS = &tls.Config{ServerName: host}
		}
		return demoHub{name: "imap " + f.imap, real: true, open: func(ctx context.Context) (hub.Store, error) {
			return imaphub.Open(ctx, cfg)
		}}, nil
	case f.jmap != "":
		cfg := jmaphub.Config{SessionURL: f.jmap, Username: f.user, Password: f.pass}
		return demoHub{name: "jmap " + f.jmap, real: true, open: func(ctx context.Context) (hub.Store, error) {
			return jmaphub.Open(ctx, cfg)
		}}, nil
	}
	srv := memhub.NewServer()
	return demoHub{name: "memhub (in memory)", open: func(context.Context) (hub.Store, error) {
		return srv.Open(), nil
	}}, nil
}

// demoItem is one list item as a device shows it.
type demoItem struct {
	Title    []string `json:"title"`
	Qty      []string `json:"qty"`
	Conflict bool     `json:"conflict"`
	Tags     []string `json:"tags"`
}

type demoDevice struct {
	Name     string     `json:"name"`
	DeviceID string     `json:"device"`
	List     []string   `json:"list"`
	Items    []demoItem `json:"items"`
	State    string     `json:"state_sha256"`
}

type demoCheck struct {
	Check string `json:"check"`
	OK    bool   `json:"ok"`
}

type demoResult struct {
	Hub        string       `json:"hub"`
	User       string       `json:"user"`
	Collection string       `json:"collection"`
	Steps      []string     `json:"steps"`
	Devices    []demoDevice `json:"devices"`
	Identical  bool         `json:"identical"`
	Checks     []demoCheck  `json:"checks"`
	OK         bool         `json:"ok"`
}

func runDemo(ctx context.Context, stdout, stderr io.Writer, f demoFlags) error {
	h, err := chooseHub(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, err := demoScenario(ctx, h, log, h.real && !f.keep)
	if err != nil {
		return fmt.Errorf("demo on %s: %w", h.name, err)
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
		return errors.New("demo: the devices did not converge as expected")
	}
	return nil
}

// demoRun is the state of one scenario run.
type demoRun struct {
	ctx   context.Context
	a, b  *tandem.Device
	c     tandem.CollectionID
	items map[string]tandem.RecordID
	res   *demoResult
	rej   int // messages rejected by either device
}

func demoScenario(ctx context.Context, h demoHub, log *slog.Logger, cleanup bool) (res *demoResult, err error) {
	tmp, err := os.MkdirTemp("", "ferry-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if cleanup {
		before, err := folderIDs(ctx, h)
		if err != nil {
			return nil, err
		}
		// Clean up on success, on error and on Ctrl-C alike: with a context
		// of its own, since ctx may be what ended the demo.
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			n, cerr := removeDemoMessages(cctx, h, before)
			switch {
			case cerr != nil:
				err = errors.Join(err, fmt.Errorf("the demo's messages could not all be removed from the mail account (%w); remove the folder %q by hand", cerr, hub.Folder))
			case res != nil:
				r := &demoRun{res: res}
				r.step("the demo's %d messages are removed from the mail account (--keep keeps them)", n)
			}
		}()
	}
	r := &demoRun{ctx: ctx, items: map[string]tandem.RecordID{}, res: &demoResult{Hub: h.name}}
	opts := tandem.Options{Name: "Demo user", Store: h.open, Logger: log}
	if r.a, err = tandem.Open(ctx, filepath.Join(tmp, "a"), opts); err != nil {
		return nil, err
	}
	defer r.a.Close()
	if r.b, err = tandem.Restore(ctx, filepath.Join(tmp, "b"), r.a.ShowBackupKey(), opts); err != nil {
		return nil, err
	}
	defer r.b.Close()
	r.res.User = r.a.UserID().String()
	for _, step := range []func() error{r.create, r.pair, r.editA, r.editB, r.converge} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	r.check()
	return r.res, nil
}

// folderIDs lists the messages in the hub's folder.
func folderIDs(ctx context.Context, h demoHub) (map[hub.ID]bool, error) {
	s, err := h.open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := s.EnsureFolder(ctx); err != nil {
		return nil, err
	}
	ch, err := s.Changes(ctx, nil)
	if err != nil {
		return nil, err
	}
	ids := map[hub.ID]bool{}
	for _, a := range ch.Added {
		ids[a.ID] = true
	}
	return ids, nil
}

// removeDemoMessages destroys the messages that entered the folder while
// the demo ran, and nothing that was there before.
func removeDemoMessages(ctx context.Context, h demoHub, before map[hub.ID]bool) (int, error) {
	s, err := h.open(ctx)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	ch, err := s.Changes(ctx, nil)
	if err != nil {
		return 0, err
	}
	var ids []hub.ID
	for _, a := range ch.Added {
		if !before[a.ID] {
			ids = append(ids, a.ID)
		}
	}
	return len(ids), s.Destroy(ctx, ids)
}

func (r *demoRun) step(format string, args ...any) {
	r.res.Steps = append(r.res.Steps, fmt.Sprintf(format, args...))
}

func (r *demoRun) sync(d *tandem.Device) (tandem.SyncReport, error) {
	rep, err := d.Sync(r.ctx)
	if err != nil {
		return rep, err
	}
	r.rej += rep.Rejected
	return rep, nil
}

// newItem adds a list item with a title, a quantity and tags.
func (r *demoRun) newItem(d *tandem.Device, title, qty string, tags ...string) error {
	id, err := d.NewRecord(r.c, map[string][]byte{"title": []byte(title), "qty": []byte(qty)})
	if err != nil {
		return err
	}
	r.items[title] = id
	for _, t := range tags {
		if err := d.AddElement(r.c, id, "tags", []byte(t)); err != nil {
			return err
		}
	}
	return nil
}

func (r *demoRun) create() error {
	var err error
	if r.c, err = r.a.NewCollection("Groceries"); err != nil {
		return err
	}
	r.res.Collection = r.c.String()
	if err := errors.Join(r.newItem(r.a, "Milk", "1", "dairy"), r.newItem(r.a, "Eggs", "12"), r.newItem(r.a, "Bread", "1")); err != nil {
		return err
	}
	rep, err := r.sync(r.a)
	if err != nil {
		return err
	}
	r.step("A creates \"Groceries\", adds Milk (qty 1, tag dairy), Eggs (qty 12), Bread (qty 1), and syncs: %d messages published", rep.Published)
	return nil
}

func (r *demoRun) pair() error {
	if _, err := r.sync(r.b); err != nil {
		return err
	}
	if !slices.Contains(r.b.Collections(), r.c) {
		return errors.New("device B did not find the collection in home")
	}
	recs, err := r.b.Records(r.c)
	if err != nil {
		return err
	}
	r.step("B is set up from the same user secret with a new device ID, syncs, and finds \"Groceries\" in home (%d items)", len(listItems(recs)))
	r.step("B goes offline")
	return nil
}

func (r *demoRun) editA() error {
	milk := r.items["Milk"]
	if err := errors.Join(
		r.a.SetString(r.c, milk, "qty", "2"),
		r.a.RemoveElement(r.c, milk, "tags", []byte("dairy")),
		r.newItem(r.a, "Apples", "6"),
	); err != nil {
		return err
	}
	if _, err := r.sync(r.a); err != nil {
		return err
	}
	r.step("A sets Milk qty to 2, removes tag dairy from Milk, adds Apples (qty 6), and syncs")
	return nil
}

func (r *demoRun) editB() error {
	milk := r.items["Milk"]
	if err := errors.Join(
		r.b.SetString(r.c, milk, "qty", "3"),
		r.b.AddElement(r.c, milk, "tags", []byte("dairy")),
		r.newItem(r.b, "Coffee", "1"),
		r.b.Delete(r.c, r.items["Bread"]),
	); err != nil {
		return err
	}
	r.step("B, offline, sets Milk qty to 3, tags Milk dairy again, adds Coffee (qty 1), deletes Bread")
	return nil
}

func (r *demoRun) converge() error {
	repB, err := r.sync(r.b)
	if err != nil {
		return err
	}
	repA, err := r.sync(r.a)
	if err != nil {
		return err
	}
	r.step("B comes online and syncs (%d published, %d applied); A syncs (%d applied)", repB.Published, repB.Applied, repA.Applied)
	for _, d := range []struct {
		name string
		dev  *tandem.Device
	}{{"A", r.a}, {"B", r.b}} {
		dd, err := r.describe(d.name, d.dev)
		if err != nil {
			return err
		}
		r.res.Devices = append(r.res.Devices, dd)
	}
	return nil
}

func (r *demoRun) describe(name string, d *tandem.Device) (demoDevice, error) {
	recs, err := d.Records(r.c)
	if err != nil {
		return demoDevice{}, err
	}
	b, err := json.Marshal(recs)
	if err != nil {
		return demoDevice{}, err
	}
	sum := sha256.Sum256(b)
	names, err := d.Name(r.c)
	if err != nil {
		return demoDevice{}, err
	}
	var list []string
	for _, n := range names {
		list = append(list, n.String())
	}
	id := d.DeviceID()
	return demoDevice{Name: name, DeviceID: hex.EncodeToString(id[:]), List: list, Items: listItems(recs), State: hex.EncodeToString(sum[:])}, nil
}

// listItems reads the list's items: every record with a title that is not
// deleted, sorted by title.
func listItems(recs []tandem.Record) []demoItem {
	var out []demoItem
	for _, rec := range recs {
		title := rec.Fields["title"].Strings()
		if rec.Deleted || len(title) == 0 {
			continue
		}
		it := demoItem{Title: title, Qty: rec.Fields["qty"].Strings(), Tags: []string{}}
		it.Conflict = len(it.Title) > 1 || len(it.Qty) > 1
		for _, t := range rec.Fields["tags"].Elements {
			it.Tags = append(it.Tags, string(t))
		}
		out = append(out, it)
	}
	slices.SortFunc(out, func(x, y demoItem) int {
		return cmp.Compare(strings.Join(x.Title, "|"), strings.Join(y.Title, "|"))
	})
	return out
}

// check compares the two devices and the expected merge outcomes.
func (r *demoRun) check() {
	a, b := r.res.Devices[0], r.res.Devices[1]
	ja, _ := json.Marshal(a.Items)
	jb, _ := json.Marshal(b.Items)
	r.res.Identical = a.State == b.State && bytes.Equal(ja, jb)
	milk := findItem(a.Items, "Milk")
	titles := []string{}
	for _, it := range a.Items {
		titles = append(titles, strings.Join(it.Title, "|"))
	}
	r.res.Checks = []demoCheck{
		{"both devices hold identical merged state", r.res.Identical},
		{"concurrent assigns to Milk qty are kept as siblings, shown as a conflict: 2 | 3", milk != nil && milk.Conflict && slices.Equal(milk.Qty, []string{"2", "3"})},
		{"concurrent add and remove of tag dairy on Milk: add wins", milk != nil && slices.Contains(milk.Tags, "dairy")},
		{"the list is Apples, Coffee, Eggs, Milk (Bread deleted)", slices.Equal(titles, []string{"Apples", "Coffee", "Eggs", "Milk"})},
		{"no message was rejected", r.rej == 0},
	}
	r.res.OK = true
	for _, c := range r.res.Checks {
		r.res.OK = r.res.OK && c.OK
	}
}

func findItem(items []demoItem, title string) *demoItem {
	for i := range items {
		if slices.Equal(items[i].Title, []string{title}) {
			return &items[i]
		}
	}
	return nil
}

func printDemo(w io.Writer, res *demoResult) {
	fmt.Fprintf(w, "Ferry demo: one user, two devices, one shared list, through a Tandem hub\n")
	fmt.Fprintf(w, "  hub         %s\n  user        %s\n  collection  %s\n\n", res.Hub, res.User, res.Collection)
	for i, s := range res.Steps {
		fmt.Fprintf(w, "%d. %s\n", i+1, s)
	}
	for _, d := range res.Devices {
		fmt.Fprintf(w, "\nDevice %s (%s): %s\n", d.Name, d.DeviceID, strings.Join(d.List, " | "))
		for _, it := range d.Items {
			fmt.Fprintf(w, "  - %-8s %s%s\n", strings.Join(it.Title, " | "), showQty(it.Qty), showTags(it.Tags))
		}
		fmt.Fprintf(w, "  state sha256 %s\n", d.State)
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
		fmt.Fprintln(w, "\nThe two devices converged to identical lists.")
	} else {
		fmt.Fprintln(w, "\nThe devices did NOT converge as expected.")
	}
}

func showQty(q []string) string {
	switch len(q) {
	case 0:
		return ""
	case 1:
		return "qty " + q[0]
	}
	return "qty CONFLICT " + strings.Join(q, " | ")
}

func showTags(t []string) string {
	if len(t) == 0 {
		return ""
	}
	return "  tags " + strings.Join(t, ", ")
}
