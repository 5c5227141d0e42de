package client

import (
	"testing"
	"time"
)

// The automatic-answer limiter: one answer per requester and kind within
// AnswerEvery, AnswerBurst per collection and kind at once, refilled over
// AnswerRefill, collections and kinds apart.
func TestAnswerLimiter(t *testing.T) {
	l := newAnswerLimiter()
	now := time.Unix(1_000_000, 0)
	c, other := CollectionID{1}, CollectionID{2}
	uid := func(i int) [32]byte { return [32]byte{byte(i), byte(i >> 8)} }
	if !l.allow(c, uid(0), answerKeyReq, now) {
		t.Fatal("the first answer was refused")
	}
	if l.allow(c, uid(0), answerKeyReq, now.Add(time.Minute)) {
		t.Fatal("a copy within AnswerEvery was answered")
	}
	n := 0
	for i := 1; l.allow(c, uid(i), answerDecline, now); i++ {
		n++
	}
	if n != AnswerBurst {
		t.Fatalf("%d answers at once, want the burst %d", n, AnswerBurst)
	}
	if !l.allow(other, uid(500), answerDecline, now) {
		t.Fatal("another collection's answers were limited too")
	}
	if !l.allow(c, uid(501), answerKeyReq, now) {
		t.Fatal("declines used up the answers to key requests")
	}
	later := now.Add(AnswerRefill / AnswerBurst)
	if !l.allow(c, uid(600), answerDecline, later) || l.allow(c, uid(601), answerDecline, later) {
		t.Fatal("the refill did not give exactly one answer after AnswerRefill/AnswerBurst")
	}
	if !l.allow(c, uid(0), answerKeyReq, now.Add(AnswerEvery+AnswerRefill)) {
		t.Fatal("the same requester was refused after AnswerEvery")
	}
}
