package client

import (
	"time"
)

// Automatic answers (declines of requests on invites that no longer admit,
// grants answering key requests and requests of current members, roster
// replies to removed users' key requests, §11.3–11.4) are appended for
// what others post, so each is deduplicated by what it answers and
// rate-limited per requester and per collection: junk cannot make the
// device append without limit, and the device's own edits, pushed first,
// keep the append budget. docs/decisions/tandem-client-answers.md.
const (
	// AnswerEvery is how often one requester gets an automatic answer of
	// one kind for one collection: copies of one request within it get
	// none (the key request interval of §11.4).
	AnswerEvery = KeyRequestAfter
	// AnswerBurst automatic answers of one kind per collection may go at
	// once; after that AnswerBurst per AnswerRefill. Kinds are counted
	// apart, so junk join requests never use up the answers to members'
	// key requests.
	AnswerBurst  = 20
	AnswerRefill = time.Hour
)

// answerKind is what an automatic answer answers.
type answerKind uint8

const (
	answerDecline answerKind = iota + 1
	answerKeyReq             // a grant or a roster reply to a key request
	answerRegrant            // a grant again to a current member's join request
)

type answerKey struct {
	coll CollectionID
	uid  [32]byte
	kind answerKind
}

// answerLimiter decides whether an automatic answer may go. It lives in
// memory: a restart forgets it, which costs at most one more burst.
type answerLimiter struct {
	last    map[answerKey]time.Time // the last answer per requester and kind
	buckets map[bucketKey]*answerBucket
}

type bucketKey struct {
	coll CollectionID
	kind answerKind
}

type answerBucket struct {
	tokens float64
	at     time.Time
}

func newAnswerLimiter() *answerLimiter {
	return &answerLimiter{last: map[answerKey]time.Time{}, buckets: map[bucketKey]*answerBucket{}}
}

// allow reports whether an answer of kind to uid for collection c may be
// sent now, and if so counts it.
func (l *answerLimiter) allow(c CollectionID, uid [32]byte, kind answerKind, now time.Time) bool {
	k := answerKey{c, uid, kind}
	if t, ok := l.last[k]; ok && now.Sub(t) < AnswerEvery && !now.Before(t) {
		return false
	}
	b := l.buckets[bucketKey{c, kind}]
	if b == nil {
		b = &answerBucket{tokens: AnswerBurst, at: now}
		l.buckets[bucketKey{c, kind}] = b
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(AnswerBurst, b.tokens+AnswerBurst*d.Seconds()/AnswerRefill.Seconds())
	}
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	l.last[k] = now
	l.prune(now)
	return true
}

// prune forgets requesters answered longer than AnswerEvery ago, so the
// table stays as small as the answers of one interval.
func (l *answerLimiter) prune(now time.Time) {
	if len(l.last) < 4*AnswerBurst {
		return
	}
	for k, t := range l.last {
		if now.Sub(t) >= AnswerEvery {
			delete(l.last, k)
		}
	}
}

// mayAnswer is allow on the device's limiter and clock. d.mu is held.
func (d *Device) mayAnswer(c CollectionID, uid [32]byte, kind answerKind) bool {
	if d.answers.allow(c, uid, kind, d.now()) {
		return true
	}
	d.log.Info("tandem/client: automatic answer not sent (a copy was answered, or the collection's answer rate is used up)", "collection", c, "kind", kind)
	return false
}
