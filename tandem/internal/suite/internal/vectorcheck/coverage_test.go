package vectorcheck

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"testing"
	"unicode/utf8"

	"filippo.io/edwards25519"
)

// required lists each section's fields exactly as issue 2 names them (and,
// for the three sections beyond it, as docs/vectors.md names them); allowed
// lists the extra members a section may carry.
var required = map[string][]string{
	"users":             {"secret", "uid", "uka", "home_key", "home_tag", "inbox_tag", "home_scope", "kid", "backup_key"},
	"named_records":     {"name", "id"},
	"commitments":       {"key", "commit"},
	"collection_tags":   {"key", "epoch", "tag"},
	"invites":           {"secret", "sign_pub", "channel_key", "tag"},
	"pairings":          {"p", "key", "tag", "ek", "n", "code"},
	"envelopes":         {"kind", "key", "salt", "tag", "plaintext", "envelope"},
	"inbox":             {"recipient_secret", "tag", "plaintext", "envelope"},
	"writes":            {"author_secret", "scope", "record", "field", "op", "element", "value", "device", "millis", "counter", "ref", "context", "base", "sig_input", "write_id", "sig"},
	"inventories":       {"records", "bytes", "hash"},
	"ed25519":           {"pub", "msg", "sig", "valid"},
	"signed_objects":    {"type", "fields", "bytes"},
	"backup_key_inputs": {"input", "ok", "secret"},
	"pair_replies":      {"ek_secret", "ek", "uid", "sealed", "user_secret"},
}

var allowed = map[string][]string{"ed25519": {"comment"}}

// TestFieldNames checks that every entry of every section has exactly the
// published field names, at least 3 entries per section, and inventory
// records exactly "id" and "writes".
func TestFieldNames(t *testing.T) {
	var file map[string]json.RawMessage
	if err := json.Unmarshal(readVectors(t), &file); err != nil {
		t.Fatal(err)
	}
	for section, want := range required {
		var entries []map[string]json.RawMessage
		if err := json.Unmarshal(file[section], &entries); err != nil {
			t.Errorf("section %s: %v", section, err)
			continue
		}
		if len(entries) < 3 {
			t.Errorf("section %s has %d entries, want at least 3", section, len(entries))
		}
		for i, e := range entries {
			for _, f := range want {
				if _, ok := e[f]; !ok {
					t.Errorf("%s[%d] lacks %q", section, i, f)
				}
			}
			for f := range e {
				if !slices.Contains(want, f) && !slices.Contains(allowed[section], f) {
					t.Errorf("%s[%d] has unexpected member %q", section, i, f)
				}
			}
			if section != "inventories" {
				continue
			}
			var recs []map[string]json.RawMessage
			if err := json.Unmarshal(e["records"], &recs); err != nil {
				t.Errorf("inventories[%d].records: %v", i, err)
			}
			for _, r := range recs {
				keys := make([]string, 0, len(r))
				for k := range r {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				if !slices.Equal(keys, []string{"id", "writes"}) {
					t.Errorf("inventories[%d] record members %v, want id and writes", i, keys)
				}
			}
		}
	}
}

func nonASCII(s string) bool {
	for _, r := range s {
		if r >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// TestVariety checks, from the vectors' own bytes rather than their
// comments, the variety issue 2 asks for.
func TestVariety(t *testing.T) {
	v := load(t)
	has := map[string]bool{}
	for _, n := range v.NamedRecords {
		has["empty name"] = has["empty name"] || n.Name == ""
		has["non-ASCII name"] = has["non-ASCII name"] || nonASCII(n.Name)
	}
	ops := map[int]bool{}
	for _, w := range v.Writes {
		ops[w.Op] = true
		has["empty field"] = has["empty field"] || w.Field == ""
		has["non-ASCII field"] = has["non-ASCII field"] || nonASCII(w.Field)
		has["empty element"] = has["empty element"] || len(w.Element) == 0 && (w.Op == 2 || w.Op == 3)
		for _, x := range [][]dot{w.Context, w.Base} {
			has["vv with 0 entries"] = has["vv with 0 entries"] || len(x) == 0
			has["vv with several entries"] = has["vv with several entries"] || len(x) >= 2
		}
	}
	has["all four ops"] = len(ops) == 4 && ops[1] && ops[2] && ops[3] && ops[4]
	kinds := map[int]bool{}
	for _, e := range v.Envelopes {
		kinds[e.Kind] = true
		has["empty plaintext"] = has["empty plaintext"] || len(e.Plaintext) == 0
	}
	has["kinds 1 and 3"] = kinds[1] && kinds[3]
	for _, inv := range v.Inventories {
		has["empty inventory"] = has["empty inventory"] || len(inv.Records) == 0
		has["inventory with several records"] = has["inventory with several records"] || len(inv.Records) >= 2
	}
	for _, p := range v.Pairings {
		has["pairing code with a leading zero"] = has["pairing code with a leading zero"] || p.Code[0] == '0'
	}
	for _, e := range v.Ed25519 {
		for k, ok := range ed25519Classes(e.Pub, e.Sig) {
			if ok {
				if e.Valid && k != "small-order R" {
					t.Errorf("ed25519 %q is valid but has %s", e.Comment, k)
				}
				if k == "small-order R" && e.Valid {
					k = "valid with small-order R"
				}
				has[k] = true
			}
		}
	}
	for _, want := range []string{"empty name", "non-ASCII name", "empty field", "non-ASCII field", "empty element",
		"vv with 0 entries", "vv with several entries", "all four ops", "kinds 1 and 3", "empty plaintext",
		"empty inventory", "inventory with several records", "pairing code with a leading zero",
		"S ≥ L", "non-canonical R", "non-canonical A", "small-order A", "valid with small-order R"} {
		if !has[want] {
			t.Errorf("no vector has %s", want)
		}
	}
}

// ed25519Classes says which §5.5 edge cases a (pub, sig) pair exhibits.
func ed25519Classes(pub, sig []byte) map[string]bool {
	out := map[string]bool{}
	if len(pub) != 32 || len(sig) != 64 {
		return out
	}
	_, err := edwards25519.NewScalar().SetCanonicalBytes(sig[32:])
	out["S ≥ L"] = err != nil
	for name, b := range map[string][]byte{"A": pub, "R": sig[:32]} {
		p, err := new(edwards25519.Point).SetBytes(b)
		if err != nil {
			continue
		}
		out["non-canonical "+name] = !bytes.Equal(p.Bytes(), b)
		small := new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1
		out["small-order "+name] = small && bytes.Equal(p.Bytes(), b)
	}
	return out
}

// TestEnvelopeChannels checks that every envelope vector uses a real
// channel's key and tag from the other sections (docs/vectors.md: epoch,
// home, invite and pairing channels), and that all four kinds of channel
// occur.
func TestEnvelopeChannels(t *testing.T) {
	v := load(t)
	type channel struct{ kind, tag string }
	chans := map[string]channel{}
	for _, c := range v.CollectionTags {
		chans[string(c.Key)] = channel{"epoch", c.Tag}
	}
	for _, u := range v.Users {
		chans[string(u.HomeKey)] = channel{"home", u.HomeTag}
	}
	for _, in := range v.Invites {
		chans[string(in.ChannelKey)] = channel{"invite", in.Tag}
	}
	for _, p := range v.Pairings {
		chans[string(p.Key)] = channel{"pairing", p.Tag}
	}
	seen := map[string]bool{}
	for i, e := range v.Envelopes {
		c, ok := chans[string(e.Key)]
		if !ok || c.tag != e.Tag {
			t.Errorf("envelopes[%d]: key and tag are not a channel of the other sections", i)
			continue
		}
		seen[c.kind] = true
	}
	for _, k := range []string{"epoch", "home", "invite", "pairing"} {
		if !seen[k] {
			t.Errorf("no envelope on a %s channel", k)
		}
	}
}
