package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ferry-sync/ferry/tandem"
	"github.com/ferry-sync/ferry/tandem/hub"
)

type demoStep struct {
	Title string   `json:"title"`
	Sees  []string `json:"sees"`
}

type demoCheck struct {
	Check string `json:"check"`
	OK    bool   `json:"ok"`
}

type demoResult struct {
	Hub        string      `json:"hub"`
	Collection string      `json:"collection"`
	Steps      []demoStep  `json:"steps"`
	Checks     []demoCheck `json:"checks"`
	OK         bool        `json:"ok"`
}

// story is one run of the demo: the devices and what happened.
type story struct {
	ctx                          context.Context
	h                            demoHub
	log                          *slog.Logger
	dir                          string
	phone, laptop, aimee, ben    *tandem.Device
	house                        tandem.CollectionID
	paint                        tandem.RecordID
	res                          *demoResult
	codesMatched, benRefused     bool
	aimeeRemoved, benAfterRot    bool
	healed, tabletEqual          bool
	conflict                     []string
	aimeeKeptEdit, phoneLaptopEq bool
	before                       map[hub.ID]bool // the folder before the demo
}

// demoStory runs the story on h. With cleanup, the messages that entered
// the hub's folder while it ran are destroyed at the end, whatever ended it.
func demoStory(ctx context.Context, h demoHub, log *slog.Logger, cleanup bool) (res *demoResult, err error) {
	tmp, err := os.MkdirTemp("", "ferry-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	before, err := folderIDs(ctx, h)
	if err != nil {
		return nil, err
	}
	if cleanup {
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			n, cerr := removeDemoMessages(cctx, h, before)
			switch {
			case cerr != nil:
				err = errors.Join(err, fmt.Errorf("the demo's messages could not all be removed (%w); delete the folder %q of the account by hand", cerr, hub.Folder))
			case res != nil:
				res.Steps = append(res.Steps, demoStep{Title: fmt.Sprintf("The demo's %d messages are removed from the mail account (--keep keeps them).", n)})
			}
		}()
	}
	s := &story{ctx: ctx, h: h, log: log, dir: tmp, res: &demoResult{Hub: h.name}}
	if s.before, err = folderIDs(ctx, h); err != nil {
		return nil, err
	}
	defer s.close()
	for _, step := range []func() error{s.start, s.pair, s.shareQR, s.shareLink, s.offline, s.reader, s.remove, s.vandal} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	s.check()
	return s.res, nil
}

func (s *story) close() {
	for _, d := range []*tandem.Device{s.phone, s.laptop, s.aimee, s.ben} {
		if d != nil {
			d.Close()
		}
	}
}

func (s *story) step(title string, sees ...string) {
	s.res.Steps = append(s.res.Steps, demoStep{Title: title, Sees: sees})
}

func (s *story) open(name, dir string) (*tandem.Device, error) {
	return tandem.Open(s.ctx, filepath.Join(s.dir, dir), s.h.options(name, s.log))
}

func (s *story) sync(ds ...*tandem.Device) error {
	for _, d := range ds {
		if _, err := d.Sync(s.ctx); err != nil {
			return err
		}
	}
	return nil
}

// view is what a person sees of House on a device, one line per item.
func (s *story) view(who string, d *tandem.Device) string {
	recs, err := d.Records(s.house)
	if err != nil {
		return who + ": (no House)"
	}
	var items []string
	for _, r := range recs {
		if r.Deleted || len(r.Fields["title"].Values) == 0 {
			continue
		}
		it := strings.Join(r.Fields["title"].Strings(), " | ")
		if q := r.Fields["qty"]; len(q.Values) > 0 {
			if q.Conflict() {
				var vs []string
				for _, v := range q.Values {
					vs = append(vs, v.String()+" by "+v.Author.Name)
				}
				it += " (qty CONFLICT: " + strings.Join(vs, ", ") + ")"
			} else {
				it += " ×" + q.Values[0].String()
			}
		}
		for _, t := range r.Fields["tags"].Elements {
			it += " #" + string(t)
		}
		items = append(items, it)
	}
	slices.Sort(items)
	return who + ": " + strings.Join(items, "; ")
}

func (s *story) start() error {
	var err error
	if s.phone, err = s.open("Jesper", "jesper-phone"); err != nil {
		return err
	}
	if s.house, err = s.phone.NewCollection("House"); err != nil {
		return err
	}
	s.res.Collection = s.house.String()
	if s.paint, err = s.phone.NewRecord(s.house, map[string][]byte{"title": []byte("Paint"), "qty": []byte("2")}); err != nil {
		return err
	}
	for _, t := range []string{"Nails", "Tape"} {
		if _, err := s.phone.NewRecord(s.house, map[string][]byte{"title": []byte(t)}); err != nil {
			return err
		}
	}
	if err := s.sync(s.phone); err != nil {
		return err
	}
	key, _ := s.phone.BackupKey()
	s.step("Jesper installs Ferry on his phone and makes a list, House: Paint ×2, Nails, Tape.",
		"Jesper's phone: \"Write this down. It's the only way back in if you lose every device\": "+key[:19]+"…",
		s.view("Jesper's phone", s.phone))
	return nil
}

func (s *story) pair() error {
	offer, err := s.phone.AddDevice(s.ctx)
	if err != nil {
		return err
	}
	defer offer.Close(context.WithoutCancel(s.ctx))
	join, err := tandem.JoinDevice(s.ctx, filepath.Join(s.dir, "jesper-laptop"), offer.Payload(), s.h.options("Jesper's laptop", s.log))
	if err != nil {
		return err
	}
	req, err := offer.Next(s.ctx) // the phone sees the request and answers with a challenge
	if err != nil {
		return fmt.Errorf("pairing, the phone: %w", err)
	}
	code, err := join.Code(s.ctx) // the laptop checks the challenge and shows its code
	if err != nil {
		return fmt.Errorf("pairing, the laptop: %w", err)
	}
	n := struct{ r *tandem.PairingRequest }{req}
	s.codesMatched = n.r.Code() == code
	if !s.codesMatched {
		return fmt.Errorf("pairing: the codes differ (%s, %s)", n.r.Code(), code)
	}
	if err := n.r.Approve(s.ctx); err != nil {
		return err
	}
	if s.laptop, err = join.Device(s.ctx); err != nil {
		return err
	}
	if err := s.sync(s.laptop); err != nil {
		return err
	}
	s.step("Jesper adds his laptop: the phone shows a QR code, the laptop scans it.",
		fmt.Sprintf("Jesper's phone: Add '%s'? Code %s %s", n.r.Name(), code[:3], code[3:]),
		fmt.Sprintf("Jesper's laptop: Code %s %s — the same, so Jesper taps Add.", code[:3], code[3:]),
		s.view("Jesper's laptop", s.laptop))
	return nil
}

func (s *story) shareQR() error {
	qr, err := s.phone.Invite(s.house, tandem.InviteOptions{})
	if err != nil {
		return err
	}
	if err := s.sync(s.phone); err != nil {
		return err
	}
	if s.aimee, err = s.open("Aimee", "aimee-phone"); err != nil {
		return err
	}
	if _, err := s.aimee.Join(s.ctx, qr.Payload, "Aimee"); err != nil {
		return err
	}
	if err := s.sync(s.aimee, s.phone, s.aimee); err != nil {
		return err
	}
	s.step("Jesper shows Aimee a QR code (Share → QR); she scans it and is in at once.",
		s.view("Aimee", s.aimee))
	return nil
}

func (s *story) shareLink() error {
	link, err := s.phone.Invite(s.house, tandem.InviteOptions{Link: true, Role: tandem.RoleReader})
	if err != nil {
		return err
	}
	if err := s.sync(s.phone, s.laptop); err != nil {
		return err
	}
	if s.ben, err = s.open("Ben", "ben-laptop"); err != nil {
		return err
	}
	if _, err := s.ben.Join(s.ctx, link.Link, "Ben"); err != nil {
		return err
	}
	if err := s.sync(s.ben, s.laptop); err != nil {
		return err
	}
	reqs, err := s.laptop.Requests(s.house)
	if err != nil {
		return err
	}
	if len(reqs) != 1 {
		return fmt.Errorf("the laptop sees %d requests, want Ben's", len(reqs))
	}
	waiting, err := s.ben.Membership(s.house)
	if err != nil {
		return err
	}
	if err := s.laptop.Approve(s.ctx, reqs[0].ID); err != nil {
		return err
	}
	if err := s.sync(s.ben, s.phone, s.aimee); err != nil {
		return err
	}
	s.step("Jesper sends Ben a link for reading only; Ben opens it; Jesper approves on his laptop.",
		"Ben: \"Waiting for Jesper to approve\" ("+string(waiting)+")",
		"Jesper's laptop: \""+reqs[0].Name+" wants to join House\" → Approve",
		s.view("Ben", s.ben))
	return nil
}

func (s *story) offline() error {
	// Jesper's phone and Aimee edit Paint's quantity without a connection.
	if err := s.phone.SetString(s.house, s.paint, "qty", "3"); err != nil {
		return err
	}
	if err := s.phone.AddElement(s.house, s.paint, "tags", []byte("white")); err != nil {
		return err
	}
	if err := s.aimee.SetString(s.house, s.paint, "qty", "5"); err != nil {
		return err
	}
	if _, err := s.aimee.NewRecord(s.house, map[string][]byte{"title": []byte("Brushes")}); err != nil {
		return err
	}
	if err := s.sync(s.phone, s.aimee, s.phone, s.laptop, s.ben); err != nil {
		return err
	}
	r, err := s.ben.Record(s.house, s.paint)
	if err != nil {
		return err
	}
	s.conflict = r.Fields["qty"].Strings()
	s.step("Offline, Jesper sets Paint ×3 and tags it white; Aimee sets Paint ×5 and adds Brushes. Both come back online.",
		s.view("Jesper's phone", s.phone), s.view("Ben", s.ben))
	return nil
}

func (s *story) reader() error {
	err := s.ben.SetString(s.house, s.paint, "qty", "100")
	s.benRefused = tandem.CodeOf(err) == tandem.CodeNotWritable
	msg := "(accepted!)"
	if err != nil {
		msg = humanError(err)
	}
	s.step("Ben, who can only read, tries to change Paint.", "Ben: "+msg)
	return nil
}

func (s *story) remove() error {
	// Aimee is offline with one more edit when Jesper removes her.
	if err := s.aimee.SetString(s.house, s.paint, "note", "ask about primer"); err != nil {
		return err
	}
	if err := s.laptop.RemoveMember(s.ctx, s.house, s.aimee.UserID()); err != nil {
		return err
	}
	if err := s.sync(s.phone, s.ben, s.aimee); err != nil {
		return err
	}
	st, _ := s.aimee.CollectionState(s.house)
	s.aimeeRemoved = st == tandem.StateRemoved
	// Her edit went out after her removal: it is kept aside on her device,
	// refused, not shown in the list (§11.6).
	if rs, err := s.aimee.Refused(s.house); err == nil {
		s.aimeeKeptEdit = slices.ContainsFunc(rs, func(e tandem.RefusedEdit) bool {
			return e.Record() == s.paint && e.Field() == "note" && string(e.Value()) == "ask about primer"
		})
	}
	if err := s.phone.SetString(s.house, s.paint, "qty", "4"); err != nil { // settles the conflict, in the new epoch
		return err
	}
	if err := s.sync(s.phone, s.ben, s.laptop); err != nil {
		return err
	}
	r, _ := s.ben.Record(s.house, s.paint)
	s.benAfterRot = r.Get("qty") == "4" && !r.Fields["qty"].Conflict()
	aimeeSees := "Aimee: \"House is no longer shared with you.\""
	if s.aimeeKeptEdit {
		aimeeSees += " Her unsent note stays on her phone, marked not shared."
	}
	s.step("Jesper removes Aimee from House on his laptop: the list gets a new key, and Aimee's device is told.",
		aimeeSees, "Jesper's phone sets Paint ×4, which settles the conflict.", s.view("Ben", s.ben))
	return nil
}

func (s *story) vandal() error {
	v, err := s.h.open(s.ctx)
	if err != nil {
		return err
	}
	defer v.Close()
	ch, err := v.Changes(s.ctx, nil)
	if err != nil {
		return err
	}
	var ids []hub.ID
	for _, a := range ch.Added {
		if !s.before[a.ID] { // only what the demo made: a real account may hold more
			ids = append(ids, a.ID)
		}
	}
	if err := v.Destroy(s.ctx, ids); err != nil {
		return err
	}
	rep, err := s.phone.Sync(s.ctx)
	if err != nil {
		return err
	}
	s.healed = rep.Healed > 0
	if err := s.sync(s.laptop, s.ben); err != nil {
		return err
	}
	tablet, err := tandem.Restore(s.ctx, filepath.Join(s.dir, "jesper-tablet"), s.phone.ShowBackupKey(), s.h.options("Jesper", s.log))
	if err != nil {
		return err
	}
	defer tablet.Close()
	if err := s.sync(tablet); err != nil {
		return err
	}
	s.tabletEqual = sameRecords(tablet, s.phone, s.house)
	s.phoneLaptopEq = sameRecords(s.phone, s.laptop, s.house) && sameRecords(s.phone, s.ben, s.house)
	s.step(fmt.Sprintf("Someone with the mail account's password deletes all %d Ferry messages. Jesper's phone notices at its next sync and puts back what it holds (%d records and statements).", len(ids), rep.Healed),
		"A tablet Jesper sets up now from his backup key finds everything:",
		s.view("Jesper's tablet", tablet))
	return nil
}

// sameRecords compares what two devices hold of collection c.
func sameRecords(a, b *tandem.Device, c tandem.CollectionID) bool {
	ra, err1 := a.Records(c)
	rb, err2 := b.Records(c)
	ja, _ := json.Marshal(ra)
	jb, _ := json.Marshal(rb)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func (s *story) check() {
	s.res.Checks = []demoCheck{
		{"the laptop and the phone showed the same pairing code", s.codesMatched},
		{"concurrent offline edits of Paint's quantity were kept side by side: 3 | 5", slices.Equal(s.conflict, []string{"3", "5"})},
		{"Ben, a reader, could not write", s.benRefused},
		{"Aimee was told she was removed, and kept her unsent edit locally", s.aimeeRemoved && s.aimeeKeptEdit},
		{"after the new key, Ben still sees Jesper's edits", s.benAfterRot},
		{"healing put back what the vandal deleted", s.healed},
		{"a device set up after the vandal holds the same list", s.tabletEqual},
		{"Jesper's phone and laptop and Ben hold identical lists", s.phoneLaptopEq},
	}
	s.res.OK = true
	for _, c := range s.res.Checks {
		s.res.OK = s.res.OK && c.OK
	}
}

// folderIDs lists the messages in the hub's folder.
func folderIDs(ctx context.Context, h demoHub) (map[hub.ID]bool, error) {
	st, err := h.open(ctx)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.EnsureFolder(ctx); err != nil {
		return nil, err
	}
	ch, err := st.Changes(ctx, nil)
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
	st, err := h.open(ctx)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	ch, err := st.Changes(ctx, nil)
	if err != nil {
		return 0, err
	}
	var ids []hub.ID
	for _, a := range ch.Added {
		if !before[a.ID] {
			ids = append(ids, a.ID)
		}
	}
	return len(ids), st.Destroy(ctx, ids)
}
