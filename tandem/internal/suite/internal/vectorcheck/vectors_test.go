package vectorcheck

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"
)

const vectorsPath = "../../../../../testdata/vectors/tandem-v1.json"

type hexb []byte

func (b *hexb) UnmarshalJSON(d []byte) error {
	var s string
	if err := json.Unmarshal(d, &s); err != nil {
		return err
	}
	if s != strings.ToLower(s) {
		return fmt.Errorf("hex %q is not lowercase", s)
	}
	v, err := hex.DecodeString(s)
	*b = v
	return err
}

// dot is one vv entry: [device hex, millis, counter].
type dot struct {
	device  []byte
	millis  uint64
	counter uint16
}

func (e *dot) UnmarshalJSON(d []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(d, &raw); err != nil {
		return err
	}
	if len(raw) != 3 {
		return fmt.Errorf("vv entry has %d elements", len(raw))
	}
	var dev hexb
	if err := json.Unmarshal(raw[0], &dev); err != nil {
		return err
	}
	if err := json.Unmarshal(raw[1], &e.millis); err != nil {
		return err
	}
	if err := json.Unmarshal(raw[2], &e.counter); err != nil {
		return err
	}
	e.device = dev
	return nil
}

type vectors struct {
	Users []struct {
		Secret    hexb   `json:"secret"`
		UID       hexb   `json:"uid"`
		UKA       hexb   `json:"uka"`
		HomeKey   hexb   `json:"home_key"`
		HomeTag   string `json:"home_tag"`
		InboxTag  string `json:"inbox_tag"`
		HomeScope hexb   `json:"home_scope"`
		KID       hexb   `json:"kid"`
		BackupKey string `json:"backup_key"`
	} `json:"users"`
	NamedRecords []struct {
		Name string `json:"name"`
		ID   hexb   `json:"id"`
	} `json:"named_records"`
	Commitments []struct {
		Key    hexb `json:"key"`
		Commit hexb `json:"commit"`
	} `json:"commitments"`
	CollectionTags []struct {
		Key   hexb   `json:"key"`
		Epoch hexb   `json:"epoch"`
		Tag   string `json:"tag"`
	} `json:"collection_tags"`
	Invites []struct {
		Secret     hexb   `json:"secret"`
		SignPub    hexb   `json:"sign_pub"`
		ChannelKey hexb   `json:"channel_key"`
		Tag        string `json:"tag"`
	} `json:"invites"`
	Pairings []struct {
		P    hexb   `json:"p"`
		Key  hexb   `json:"key"`
		Tag  string `json:"tag"`
		EK   hexb   `json:"ek"`
		N    hexb   `json:"n"`
		Code string `json:"code"`
	} `json:"pairings"`
	Envelopes []struct {
		Kind      int    `json:"kind"`
		Key       hexb   `json:"key"`
		Salt      hexb   `json:"salt"`
		Tag       string `json:"tag"`
		Plaintext hexb   `json:"plaintext"`
		Envelope  hexb   `json:"envelope"`
	} `json:"envelopes"`
	Inbox []struct {
		RecipientSecret hexb   `json:"recipient_secret"`
		Tag             string `json:"tag"`
		Plaintext       hexb   `json:"plaintext"`
		Envelope        hexb   `json:"envelope"`
	} `json:"inbox"`
	Writes []struct {
		AuthorSecret hexb   `json:"author_secret"`
		Scope        hexb   `json:"scope"`
		Record       hexb   `json:"record"`
		Field        string `json:"field"`
		Op           int    `json:"op"`
		Element      hexb   `json:"element"`
		Value        hexb   `json:"value"`
		Device       hexb   `json:"device"`
		Millis       uint64 `json:"millis"`
		Counter      uint16 `json:"counter"`
		Ref          hexb   `json:"ref"`
		Context      []dot  `json:"context"`
		Base         []dot  `json:"base"`
		SigInput     hexb   `json:"sig_input"`
		WriteID      hexb   `json:"write_id"`
		Sig          hexb   `json:"sig"`
	} `json:"writes"`
	Inventories []struct {
		Records []struct {
			ID     hexb   `json:"id"`
			Writes []hexb `json:"writes"`
		} `json:"records"`
		Bytes hexb `json:"bytes"`
		Hash  hexb `json:"hash"`
	} `json:"inventories"`
	Ed25519 []struct {
		Comment string `json:"comment"`
		Pub     hexb   `json:"pub"`
		Msg     hexb   `json:"msg"`
		Sig     hexb   `json:"sig"`
		Valid   bool   `json:"valid"`
	} `json:"ed25519"`
	SignedObjects []struct {
		Type   string            `json:"type"`
		Fields map[string]string `json:"fields"`
		Bytes  hexb              `json:"bytes"`
	} `json:"signed_objects"`
	BackupKeyInputs []struct {
		Input  string `json:"input"`
		OK     bool   `json:"ok"`
		Secret hexb   `json:"secret"`
	} `json:"backup_key_inputs"`
	PairReplies []struct {
		EKSecret   hexb `json:"ek_secret"`
		EK         hexb `json:"ek"`
		UID        hexb `json:"uid"`
		Sealed     hexb `json:"sealed"`
		UserSecret hexb `json:"user_secret"`
	} `json:"pair_replies"`
}

func readVectors(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func load(t *testing.T) *vectors {
	t.Helper()
	var v vectors
	if err := json.Unmarshal(readVectors(t), &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

func eq(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\n got  %x\n want %x", what, got, want)
	}
}

func eqs(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

func TestUsers(t *testing.T) {
	for i, v := range load(t).Users {
		u := deriveUser(v.Secret)
		w := fmt.Sprintf("users[%d]", i)
		eq(t, w+".uid", u.uid, v.UID)
		eq(t, w+".uka", u.ukaPub, v.UKA)
		eq(t, w+".home_key", u.hk, v.HomeKey)
		eqs(t, w+".home_tag", tag20(u.hk, nil, "tandem/v1/tag"), v.HomeTag)
		eqs(t, w+".inbox_tag", tag20(u.uid, nil, "tandem/v1/inbox-tag"), v.InboxTag)
		eq(t, w+".home_scope", h([]byte("tandem/v1/home"), u.uid)[:16], v.HomeScope)
		eq(t, w+".kid", h([]byte("tandem/v1/kid"), u.ukaPub), v.KID)
		eqs(t, w+".backup_key", b32.EncodeToString(cat(v.Secret, h(v.Secret)[:3])), v.BackupKey)
		if len(v.BackupKey) != 56 {
			t.Errorf("%s.backup_key has %d characters", w, len(v.BackupKey))
		}
	}
}

func TestNamedRecordsCommitmentsTags(t *testing.T) {
	v := load(t)
	for i, n := range v.NamedRecords {
		eq(t, fmt.Sprintf("named_records[%d] %q", i, n.Name), h([]byte("tandem/v1/named"), []byte(n.Name))[:16], n.ID)
	}
	for i, c := range v.Commitments {
		eq(t, fmt.Sprintf("commitments[%d]", i), h([]byte("tandem/v1/commit"), c.Key), c.Commit)
	}
	for i, c := range v.CollectionTags {
		eqs(t, fmt.Sprintf("collection_tags[%d]", i), tag20(c.Key, c.Epoch, "tandem/v1/collection-tag"), c.Tag)
	}
	for i, in := range v.Invites {
		w := fmt.Sprintf("invites[%d]", i)
		eq(t, w+".sign_pub", ed25519Pub(kdf(in.Secret, nil, "tandem/v1/invite-sign", 32)), in.SignPub)
		ki := kdf(in.Secret, nil, "tandem/v1/invite-key", 32)
		eq(t, w+".channel_key", ki, in.ChannelKey)
		eqs(t, w+".tag", tag20(ki, nil, "tandem/v1/tag"), in.Tag)
	}
	for i, p := range v.Pairings {
		w := fmt.Sprintf("pairings[%d]", i)
		eq(t, w+".key", kdf(p.P, nil, "tandem/v1/pair-key", 32), p.Key)
		// §5.6: the pairing tag is derived from P itself, not from the pairing key.
		eqs(t, w+".tag", tag20(p.P, nil, "tandem/v1/tag"), p.Tag)
		n := binary.BigEndian.Uint32(h([]byte("tandem/v1/pair-code"), p.P, p.EK, p.N)[:4]) % 1000000
		eqs(t, w+".code", fmt.Sprintf("%06d", n), p.Code)
	}
}

func TestEnvelopes(t *testing.T) {
	for i, e := range load(t).Envelopes {
		w := fmt.Sprintf("envelopes[%d]", i)
		if e.Kind != 1 && e.Kind != 3 {
			t.Errorf("%s: kind %d", w, e.Kind)
		}
		if len(e.Salt) != 32 || len(e.Tag) != 32 {
			t.Errorf("%s: salt %d bytes, tag %d chars", w, len(e.Salt), len(e.Tag))
		}
		hdr := []byte{'T', 'N', 'D', 'M', 1, byte(e.Kind)}
		mk := kdf(e.Key, e.Salt, "tandem/v1/msg", 32)
		aead, err := chacha20poly1305.New(mk)
		if err != nil {
			t.Fatal(err)
		}
		aad := cat(hdr, []byte(e.Tag))
		ct := aead.Seal(nil, make([]byte, 12), e.Plaintext, aad)
		eq(t, w+".envelope", cat(hdr, e.Salt, ct), e.Envelope)
	}
}

func TestInbox(t *testing.T) {
	for i, e := range load(t).Inbox {
		w := fmt.Sprintf("inbox[%d]", i)
		u := deriveUser(e.RecipientSecret)
		eqs(t, w+".tag", tag20(u.uid, nil, "tandem/v1/inbox-tag"), e.Tag)
		hdr := []byte{'T', 'N', 'D', 'M', 1, 2}
		if len(e.Envelope) < 6+32+32+16 || !bytes.Equal(e.Envelope[:6], hdr) {
			t.Fatalf("%s: bad header %x", w, e.Envelope[:6])
		}
		eq(t, w+" kid", e.Envelope[6:38], h([]byte("tandem/v1/kid"), u.ukaPub))
		pt, err := hpkeOpen(u.uka, e.Envelope[38:], []byte("tandem/v1/inbox"), cat(hdr, []byte(e.Tag)))
		if err != nil {
			t.Errorf("%s: open: %v", w, err)
			continue
		}
		eq(t, w+".plaintext", pt, e.Plaintext)
		// A modified byte must not open.
		bad := append([]byte(nil), e.Envelope[38:]...)
		bad[len(bad)-1] ^= 1
		if _, err := hpkeOpen(u.uka, bad, []byte("tandem/v1/inbox"), cat(hdr, []byte(e.Tag))); err == nil {
			t.Errorf("%s: modified envelope opened", w)
		}
	}
}

func TestPairReplies(t *testing.T) {
	for i, p := range load(t).PairReplies {
		w := fmt.Sprintf("pair_replies[%d]", i)
		eq(t, w+".ek", x25519Pub(p.EKSecret), p.EK)
		aad := cat([]byte("TANDEM-PAIR-V1"), p.UID, p.EK)
		pt, err := hpkeOpen(p.EKSecret, p.Sealed, []byte("tandem/v1/pair"), aad)
		if err != nil {
			t.Errorf("%s: open: %v", w, err)
			continue
		}
		eq(t, w+".user_secret", pt, p.UserSecret)
		// §6.3 step 5: the secret gives the uid in the QR code.
		eq(t, w+".uid", deriveUser(pt).uid, p.UID)
	}
}

// vv is §5.5 vv(x) = u16(n) || n × (deviceID || u64(millis) || u16(counter)),
// sorted by deviceID. The vectors list entries in any order; vv sorts.
func vv(x []dot) []byte {
	s := append([]dot(nil), x...)
	sort.Slice(s, func(i, j int) bool { return bytes.Compare(s[i].device, s[j].device) < 0 })
	out := binary.BigEndian.AppendUint16(nil, uint16(len(s)))
	for _, d := range s {
		out = append(out, d.device...)
		out = binary.BigEndian.AppendUint64(out, d.millis)
		out = binary.BigEndian.AppendUint16(out, d.counter)
	}
	return out
}

func TestWrites(t *testing.T) {
	for i, x := range load(t).Writes {
		w := fmt.Sprintf("writes[%d]", i)
		u := deriveUser(x.AuthorSecret)
		value := x.Value
		if x.Op == 3 || x.Op == 4 {
			value = nil // H("") for remove/delete
			if len(x.Value) != 0 {
				t.Errorf("%s: op %d with a value", w, x.Op)
			}
		}
		in := cat(
			[]byte("TANDEM-WRITE-V1"),
			x.Scope, x.Record,
			lp([]byte(x.Field)),
			[]byte{byte(x.Op)},
			lp(x.Element),
			h(value),
			u.uid, x.Device,
			binary.BigEndian.AppendUint64(nil, x.Millis),
			binary.BigEndian.AppendUint16(nil, x.Counter),
			x.Ref,
			vv(x.Context), vv(x.Base),
		)
		if len(x.Scope) != 16 || len(x.Record) != 16 || len(x.Device) != 8 || len(x.Ref) != 32 {
			t.Errorf("%s: field sizes", w)
		}
		eq(t, w+".sig_input", in, x.SigInput)
		eq(t, w+".write_id", h(in), x.WriteID)
		eq(t, w+".sig", ed25519.Sign(ed25519.NewKeyFromSeed(u.uks), in), x.Sig)
		if !verifyStrict(u.uid, in, x.Sig) {
			t.Errorf("%s: signature does not verify strictly", w)
		}
	}
}

func TestInventories(t *testing.T) {
	for i, inv := range load(t).Inventories {
		w := fmt.Sprintf("inventories[%d]", i)
		out := binary.BigEndian.AppendUint32(nil, uint32(len(inv.Records)))
		type rec struct {
			id     []byte
			writes [][]byte
		}
		var rs []rec
		for _, r := range inv.Records {
			ws := make([][]byte, len(r.Writes))
			for j := range r.Writes {
				ws[j] = r.Writes[j]
			}
			sort.Slice(ws, func(a, b int) bool { return bytes.Compare(ws[a], ws[b]) < 0 })
			rs = append(rs, rec{r.ID, ws})
		}
		sort.Slice(rs, func(a, b int) bool { return bytes.Compare(rs[a].id, rs[b].id) < 0 })
		for _, r := range rs {
			out = append(out, r.id...)
			out = binary.BigEndian.AppendUint32(out, uint32(len(r.writes)))
			for _, x := range r.writes {
				out = append(out, x...)
			}
		}
		eq(t, w+".bytes", out, inv.Bytes)
		eq(t, w+".hash", h(out), inv.Hash)
	}
}

func TestEd25519(t *testing.T) {
	v := load(t)
	disagree := 0
	for i, e := range v.Ed25519 {
		if got := verifyStrict(e.Pub, e.Msg, e.Sig); got != e.Valid {
			t.Errorf("ed25519[%d] (%s): strict verifier says %v, vector says %v", i, e.Comment, got, e.Valid)
		}
		if len(e.Pub) == 32 && len(e.Sig) == 64 && ed25519.Verify(ed25519.PublicKey(e.Pub), e.Msg, e.Sig) != e.Valid {
			disagree++
		}
	}
	if disagree == 0 {
		t.Error("no ed25519 vector separates a strict verifier from crypto/ed25519.Verify")
	}
}

func TestSignedObjects(t *testing.T) {
	for i, o := range load(t).SignedObjects {
		f := func(k string) []byte {
			b, err := hex.DecodeString(o.Fields[k])
			if err != nil || o.Fields[k] == "" {
				t.Fatalf("signed_objects[%d]: field %q: %v", i, k, err)
			}
			return b
		}
		var want []byte
		switch o.Type {
		case "join": // §11.2
			want = cat([]byte("TANDEM-JOIN-V1"), f("collection"), f("invite"), f("uid"), f("uka"), lp([]byte(o.Fields["name"])))
		case "invite": // §11.2
			want = cat([]byte("TANDEM-INVITE-V1"), f("collection"), f("invite"), f("uid"))
		case "grant": // §11.4
			want = cat([]byte("TANDEM-GRANT-V1"), f("recipient"), f("collection"), f("at"), f("epoch"), h([]byte("tandem/v1/commit"), f("key")))
		case "keyreq": // §11.4
			want = cat([]byte("TANDEM-KEYREQ-V1"), f("collection"), f("have"), f("uid"))
		case "leave": // §11.5
			want = cat([]byte("TANDEM-LEAVE-V1"), f("collection"), f("uid"), f("at"))
		case "pair-code": // §6.3
			want = cat([]byte("TANDEM-PAIR-CODE-V1"), f("p"), f("ek"), f("n"))
		default:
			t.Errorf("signed_objects[%d]: unknown type %q", i, o.Type)
			continue
		}
		eq(t, fmt.Sprintf("signed_objects[%d] %s", i, o.Type), want, o.Bytes)
	}
}

// parseBackupKey is a reader written from tandem-gaps.md: ignore spaces and
// dashes, accept upper case, reject a wrong check.
func parseBackupKey(s string) ([]byte, bool) {
	s = strings.ToLower(strings.NewReplacer(" ", "", "-", "").Replace(s))
	b, err := b32.DecodeString(s)
	if err != nil || len(b) != 35 {
		return nil, false
	}
	if !bytes.Equal(h(b[:32])[:3], b[32:]) {
		return nil, false
	}
	return b[:32], true
}

func TestBackupKeyInputs(t *testing.T) {
	for i, b := range load(t).BackupKeyInputs {
		got, ok := parseBackupKey(b.Input)
		if ok != b.OK {
			t.Errorf("backup_key_inputs[%d] %q: ok = %v, want %v", i, b.Input, ok, b.OK)
			continue
		}
		eq(t, fmt.Sprintf("backup_key_inputs[%d]", i), got, b.Secret)
	}
}
