package client

import (
	"math/rand/v2"
	"testing"
)

// liveWrites.holds answers as a plain set of (channel, record, write ID)
// would, on both of its paths (few IDs scanned, many put in a set).
func TestLiveWritesHolds(t *testing.T) {
	_, rec, ws := sampleWrites(t)
	ids := make([][32]byte, len(ws))
	for i, w := range ws {
		ids[i] = w.ID()
	}
	other := [16]byte{9}
	rng := rand.New(rand.NewPCG(3, 4))
	filler := func(n int) [][32]byte {
		out := make([][32]byte, n)
		for i := range out {
			out[i][0], out[i][1] = 0xee, byte(rng.Uint32())
			out[i][2] = byte(i)
			out[i][3] = byte(i >> 8)
		}
		return out
	}
	outcomes := map[[2]bool]int{}
	for round := range 400 {
		l := liveWrites{}
		set := map[liveKey]map[[32]byte]bool{}
		put := func(ch string, r [16]byte, list [][32]byte) {
			l.add(ch, r, list)
			k := liveKey{ch, r}
			if set[k] == nil {
				set[k] = map[[32]byte]bool{}
			}
			for _, id := range list {
				set[k][id] = true
			}
		}
		big := round%2 == 1 // past linearMax: the set path
		for range 1 + rng.IntN(4) {
			var list [][32]byte
			for _, id := range ids {
				if rng.IntN(3) > 0 {
					list = append(list, id)
				}
			}
			if big {
				list = append(list, filler(linearMax)...)
			}
			rng.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
			switch rng.IntN(4) {
			case 0:
				put("other-channel", rec, list)
			case 1:
				put("ch", other, list)
			default:
				put("ch", rec, list)
			}
		}
		kept := ids[:1+rng.IntN(len(ids))]
		want := true
		for _, id := range kept {
			if !set[liveKey{"ch", rec}][id] {
				want = false
			}
		}
		outcomes[[2]bool{big, want}]++
		if got := l.holds("ch", rec, kept); got != want {
			t.Fatalf("round %d (many IDs: %v): holds = %v, want %v", round, big, got, want)
		}
	}
	if len(outcomes) != 4 {
		t.Fatalf("outcomes %v: both answers on both paths are needed", outcomes)
	}
	if !(liveWrites{}).holds("ch", rec, nil) {
		t.Fatal("a record with no writes is not held")
	}
	if (liveWrites{}).holds("ch", rec, ids) {
		t.Fatal("writes held with no message on the hub")
	}
}
