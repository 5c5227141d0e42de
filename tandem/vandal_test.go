package tandem

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/jmaphub"
)

// cyrusJMAP returns a JMAP Hub for a Cyrus test user with its Tandem
// mailbox emptied, the vandal's store on the same account, and Cyrus's
// IMAP address.
func cyrusJMAP(t *testing.T, user string) (Hub, hub.Store, string, string) {
	t.Helper()
	url, addr := realtest.Getenv("FERRY_CYRUS_JMAP_URL"), realtest.Getenv("FERRY_CYRUS_IMAP_ADDR")
	var pass string
	for _, up := range strings.Split(realtest.Getenv("FERRY_CYRUS_USERS"), ",") {
		if u, p, ok := strings.Cut(up, ":"); ok && u == user {
			pass = p
		}
	}
	if url == "" || addr == "" || pass == "" {
		realtest.Unavailable(t, "FERRY_CYRUS_JMAP_URL / FERRY_CYRUS_USERS with user "+user+" (run scripts/setup.d/20-cyrus.sh)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := jmaphub.Open(ctx, jmaphub.Config{SessionURL: url, Username: user, Password: pass})
	if err != nil {
		t.Fatalf("cyrus: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.EnsureFolder(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Destroy(ctx, hubIDs(t, s)); err != nil {
		t.Fatal(err)
	}
	return JMAPBasicHub(url, user, pass), s, addr, pass
}

type modelRec struct {
	title   string
	deleted bool
	tags    map[string]bool
}

// story is two devices of one user editing their own records while a
// vandal with the hub credential destroys messages, moves some out of the
// folder and back, and appends junk.
type story struct {
	t      *testing.T
	a, b   *Device
	c      CollectionID
	model  map[RecordID]*modelRec
	owner  map[RecordID]*Device
	rng    *mrand.Rand
	vandal hub.Store
	raw    func() *rawIMAP
	folder string   // the Tandem folder's IMAP name
	away   []string // UIDs moved to INBOX, to move back
}

func (s *story) edit(d *Device) {
	var mine []RecordID
	for id, o := range s.owner {
		if o == d && !s.model[id].deleted {
			mine = append(mine, id)
		}
	}
	slices.SortFunc(mine, func(x, y RecordID) int { return strings.Compare(x.String(), y.String()) })
	if len(mine) == 0 || s.rng.IntN(4) == 0 {
		title := fmt.Sprint("item ", s.rng.IntN(1000))
		id, err := d.NewRecord(s.c, map[string][]byte{"title": []byte(title)})
		if err != nil {
			s.t.Fatal(err)
		}
		s.model[id], s.owner[id] = &modelRec{title: title, tags: map[string]bool{}}, d
		return
	}
	id := mine[s.rng.IntN(len(mine))]
	m := s.model[id]
	var err error
	switch tag := fmt.Sprint("t", s.rng.IntN(4)); s.rng.IntN(10) {
	case 0:
		err, m.deleted = d.Delete(s.c, id), true
	case 1, 2, 3:
		err, m.tags[tag] = d.AddElement(s.c, id, "tags", []byte(tag)), true
	case 4, 5:
		err = d.RemoveElement(s.c, id, "tags", []byte(tag))
		delete(m.tags, tag)
	default:
		m.title = fmt.Sprint("item ", s.rng.IntN(1000))
		err = d.SetString(s.c, id, "title", m.title)
	}
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *story) vandalize() {
	ctx := s.t.Context()
	ids := hubIDs(s.t, s.vandal)
	s.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	if err := s.vandal.Destroy(ctx, ids[:min(3, len(ids))]); err != nil {
		s.t.Fatal(err)
	}
	junk := make([]byte, 200) // an envelope in form, garbage inside: opening it fails
	rand.Read(junk)
	copy(junk, "TNDM\x01\x01")
	chans := s.a.eng.Channels()
	if _, err := s.vandal.Append(ctx, chans[s.rng.IntN(len(chans))], junk); err != nil {
		s.t.Fatal(err)
	}
	x := s.raw()
	defer x.close()
	if len(s.away) > 0 { // bring back what was moved out last time
		x.cmd("SELECT INBOX")
		x.move(x.uids(), s.folder)
		s.away = nil
	}
	x.cmd("SELECT " + s.folder)
	uids := x.uids()
	s.rng.Shuffle(len(uids), func(i, j int) { uids[i], uids[j] = uids[j], uids[i] })
	s.away = uids[:min(2, len(uids))]
	x.move(s.away, "INBOX")
}

// settle syncs both devices until neither publishes or heals anything.
func (s *story) settle() {
	if len(s.away) > 0 {
		x := s.raw()
		x.cmd("SELECT INBOX")
		x.move(x.uids(), s.folder)
		x.close()
		s.away = nil
	}
	quiet := 0
	for round := 0; round < 20 && quiet < 2; round++ {
		ra, rb := syncT(s.t, s.a), syncT(s.t, s.b)
		if ra.Published+ra.Healed+rb.Published+rb.Healed == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	if quiet < 2 {
		s.t.Fatal("the devices did not settle")
	}
}

func (s *story) check(d *Device, name string) {
	rs, err := d.Records(s.c)
	if err != nil {
		s.t.Fatal(err)
	}
	got := map[RecordID]bool{}
	for _, r := range rs {
		got[r.ID] = true
		m := s.model[r.ID]
		if m == nil {
			s.t.Fatalf("%s: unknown record %s", name, r.ID)
		}
		if r.Deleted != m.deleted || (!m.deleted && r.Get("title") != m.title) || r.Fields["title"].Conflict() {
			s.t.Fatalf("%s: record %s = %+v, want %+v", name, r.ID, r, m)
		}
		var tags []string
		for _, e := range r.Fields["tags"].Elements {
			tags = append(tags, string(e))
		}
		for tg := range m.tags {
			if !m.deleted && !slices.Contains(tags, tg) {
				s.t.Fatalf("%s: record %s lacks tag %s", name, r.ID, tg)
			}
		}
		if !m.deleted && len(tags) != len(m.tags) {
			s.t.Fatalf("%s: record %s tags %v, want %v", name, r.ID, tags, m.tags)
		}
	}
	if len(got) != len(s.model) {
		s.t.Fatalf("%s holds %d records, want %d", name, len(got), len(s.model))
	}
}

func runVandalStory(t *testing.T, h Hub, vandal hub.Store, raw func() *rawIMAP, folder string) {
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Hub: h})
	defer a.Close()
	c, err := a.NewCollection("House")
	if err != nil {
		t.Fatal(err)
	}
	syncT(t, a)
	b, err := Restore(t.Context(), filepath.Join(t.TempDir(), "b"), a.ShowBackupKey(), Options{Hub: h, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	syncT(t, b)
	s := &story{t: t, a: a, b: b, c: c, model: map[RecordID]*modelRec{}, owner: map[RecordID]*Device{},
		rng: mrand.New(mrand.NewPCG(7, 11)), vandal: vandal, raw: raw, folder: folder}
	for round := 0; round < 8; round++ {
		for _, d := range []*Device{a, b} {
			for i := 0; i < 5; i++ {
				s.edit(d)
			}
			if _, err := d.Sync(t.Context()); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			s.vandalize()
		}
	}
	s.settle()
	s.check(a, "A")
	s.check(b, "B")
	if !bytesEqual(stateOf(t, a, c), stateOf(t, b, c)) {
		t.Fatal("A and B hold different states")
	}
	// The hub again holds every live write: a new device gets the same state.
	n, err := Restore(t.Context(), filepath.Join(t.TempDir(), "n"), a.ShowBackupKey(), Options{Hub: h, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	syncT(t, n)
	if !bytesEqual(stateOf(t, n, c), stateOf(t, a, c)) {
		t.Fatal("a new device does not get the full state from the hub")
	}
	t.Logf("%d records, healed A=%d B=%d", len(s.model), a.Status().Healed, b.Status().Healed)
}

func TestVandalDovecot(t *testing.T) {
	h := dovecotHub(t, "judy")
	addr := realtest.Getenv("FERRY_DOVECOT_ADDR")
	v, err := imaphub.Open(t.Context(), imaphub.Config{Addr: addr, User: "judy", Password: "judypw"})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	runVandalStory(t, h, v, func() *rawIMAP { return dialRaw(t, addr, "judy", "judypw") }, "Tandem")
}

func TestVandalCyrusJMAP(t *testing.T) {
	h, v, addr, pass := cyrusJMAP(t, "judy")
	raw := func() *rawIMAP { return dialRaw(t, addr, "judy", pass) }
	// The folder JMAP made, as Cyrus's IMAP names it.
	x := raw()
	folder := ""
	for _, l := range x.cmd(`LIST "" "*"`) {
		if f := strings.Fields(l); len(f) > 0 && strings.HasSuffix(strings.Trim(f[len(f)-1], `"`), "Tandem") {
			folder = f[len(f)-1]
		}
	}
	x.close()
	if folder == "" {
		t.Fatal("Cyrus IMAP does not list the Tandem mailbox")
	}
	runVandalStory(t, h, v, raw, folder)
}
