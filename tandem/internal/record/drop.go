package record

// Drop takes out of the state every retained write for which out returns
// true, and returns them, by record and write ID. The state is rebuilt
// from the writes that stay, so a write that one of the dropped writes had
// superseded is not brought back: the state holds only what it held. The
// caller finds such a write again where it was published (a device reads
// the record's messages again; tandem/client, refused.go). Dropping is how
// a device enforces that its state holds only writes the collection's
// group accepts (§10.7, §11.6).
func (s *State) Drop(out func(*Write) bool) []*Write {
	var gone, stay []*Write
	for w := range s.All() {
		if out(w) {
			gone = append(gone, w)
		} else {
			stay = append(stay, w)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	s.records = make(map[[16]byte]*rec)
	s.writes = 0
	for _, w := range stay {
		s.Add(w)
	}
	return gone
}
