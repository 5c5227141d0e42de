package frame

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/ferry-sync/ferry/datasync/internal/jsonstr"
)

// Marshal returns the wire bytes of f, prefix included. It refuses a frame it
// could not read back: an unknown kind, an empty or non-UTF-8 document name, a
// hash that is not 64 lowercase hex, more than [MaxDocumentBytes] of
// document bytes, or more than [MaxFrameBytes] in all (an [OverBudgetError]
// with Frame set): nothing over a bound is ever sent.
func Marshal(f Frame) ([]byte, error) {
	b, err := marshal(f)
	if err == nil && len(b) > MaxFrameBytes {
		return nil, &OverBudgetError{Doc: f.Doc, Bytes: len(b), Frame: true}
	}
	return b, err
}

func marshal(f Frame) ([]byte, error) {
	b := make([]byte, 0, 64+len(f.Blob)*4/3)
	b = append(b, Prefix...)
	b = append(b, `{"v":`...)
	b = strconv.AppendUint(b, f.V, 10)
	b = append(b, `,"k":`...)
	b = appendString(b, string(f.Kind))
	switch f.Kind {
	case KindOffer:
		return appendOffer(b, f)
	case KindDelta, KindSnap:
		if err := checkDoc(f.Doc); err != nil {
			return nil, err
		}
		if len(f.Blob) > MaxDocumentBytes {
			return nil, &OverBudgetError{Doc: f.Doc, Bytes: len(f.Blob)}
		}
		b = append(b, `,"doc":`...)
		b = appendString(b, f.Doc)
		b = append(b, `,"blob":"`...)
		b = base64.StdEncoding.AppendEncode(b, f.Blob)
		b = append(b, `"}`...)
	case KindNeedSnap:
		if err := checkDoc(f.Doc); err != nil {
			return nil, err
		}
		b = append(b, `,"doc":`...)
		b = appendString(b, f.Doc)
		b = append(b, '}')
	case KindNeedBlob, KindBlobGone:
		if !ValidHash(f.Hash) {
			return nil, fmt.Errorf("%w: hash %q is not 64 lowercase hex", ErrMalformed, f.Hash)
		}
		b = append(b, `,"hash":"`...)
		b = append(b, f.Hash...)
		b = append(b, `"}`...)
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, f.Kind)
	}
	return b, nil
}

// appendOffer writes reply, partial and docs: keys sorted bytewise, which is
// the order the reference writer's ordered map produces.
func appendOffer(b []byte, f Frame) ([]byte, error) {
	b = append(b, `,"reply":`...)
	b = strconv.AppendBool(b, f.Reply)
	b = append(b, `,"partial":`...)
	b = strconv.AppendBool(b, f.Partial)
	b = append(b, `,"docs":{`...)
	names := make([]string, 0, len(f.Docs))
	total := 0
	for name, v := range f.Docs {
		if err := checkDoc(name); err != nil {
			return nil, err
		}
		names = append(names, name)
		total += len(v)
	}
	if total > MaxDocumentBytes {
		return nil, &OverBudgetError{Bytes: total}
	}
	slices.Sort(names)
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, name)
		b = append(b, `:"`...)
		b = base64.StdEncoding.AppendEncode(b, f.Docs[name])
		b = append(b, '"')
	}
	return append(b, "}}"...), nil
}

// CheckDoc reports whether a frame can carry name as a document name:
// Ferry's rule is any non-empty UTF-8 (docs/decisions/datasync-doc-names.md).
func CheckDoc(name string) error { return checkDoc(name) }

func checkDoc(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty document name", ErrMalformed)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: document name is not UTF-8", ErrMalformed)
	}
	return nil
}

func appendString(b []byte, s string) []byte { return jsonstr.Append(b, s) }
