package testnet

import "testing"

func TestNetworkReliableOrdered(t *testing.T) {
	n := NewNetwork(1)
	for i := range 10 {
		n.Send("a", "b", []byte{byte(i)})
	}
	for i := range 10 {
		m, ok := n.Next()
		if !ok || m.Data[0] != byte(i) || m.From != "a" || m.To != "b" {
			t.Fatalf("message %d: %+v %v", i, m, ok)
		}
	}
	if _, ok := n.Next(); ok {
		t.Fatal("extra message")
	}
}

func TestNetworkLossDupPartition(t *testing.T) {
	n := NewNetwork(2)
	n.Loss, n.Dup = 0.5, 0.5
	for range 1000 {
		n.Send("a", "b", []byte("x"))
	}
	got := 0
	for _, ok := n.Next(); ok; _, ok = n.Next() {
		got++
	}
	if got < 500 || got > 1000 { // ~500 kept, ~250 of them doubled
		t.Fatalf("%d delivered of 1000 with loss and duplication", got)
	}
	n.Loss, n.Dup = 0, 0
	n.Send("a", "b", []byte("in flight"))
	n.Partition("b", "a")
	n.Send("a", "b", []byte("cut"))
	if _, ok := n.Next(); ok {
		t.Fatal("delivered across a partition")
	}
	n.Heal()
	n.Send("a", "b", []byte("healed"))
	if m, ok := n.Next(); !ok || string(m.Data) != "healed" {
		t.Fatal("not delivered after healing")
	}
}

func TestGroupNetWindow(t *testing.T) {
	g := NewGroupNet(3, "a", "b", "c")
	for range 5 {
		g.Send("a", "b", []byte("addressed"))
	}
	g.Send("a", "", []byte("roster"))
	for _, _, _, ok := g.Next(); ok; _, _, _, ok = g.Next() {
	}
	if !g.Stranded("c", "a") || g.Stranded("b", "a") {
		t.Fatal("window not enforced")
	}
	g.Send("a", "", []byte("later"))
	from, to, _, ok := g.Next()
	if !ok || from != "a" || to != "b" {
		t.Fatalf("%s>%s %v", from, to, ok)
	}
	if _, _, _, ok := g.Next(); ok {
		t.Fatal("stranded member decrypted")
	}
}

func TestShuffleDeliversAllOutOfOrder(t *testing.T) {
	var got []byte
	s := NewShuffle(3, func(m []byte) { got = append(got, m[0]) })
	for i := range 20 {
		s.Send([]byte{byte(i)})
	}
	if n := s.Flush(); n != 20 || len(got) != 20 {
		t.Fatalf("delivered %d of 20", n)
	}
	inOrder, seen := true, map[byte]bool{}
	for i, b := range got {
		inOrder = inOrder && b == byte(i)
		seen[b] = true
	}
	if inOrder || len(seen) != 20 {
		t.Fatalf("delivered %v", got)
	}
}
