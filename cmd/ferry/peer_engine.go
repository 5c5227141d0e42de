package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ferry-sync/ferry/datasync/engine"
	"github.com/ferry-sync/ferry/datasync/engine/loro"
)

// peerEngine is the document engine of a "ferry peer run" space: the
// engine interface plus the text edits and reads the command line makes.
type peerEngine interface {
	engine.Engine
	setText(doc, key, val string) error
	hasKey(doc, key string) bool
	texts(doc string) map[string]string
	close(ctx context.Context)
}

// openPeerEngine makes the engine --engine names: "kv" (Ferry's own
// encoding) or "loro" (the reference's, data_versions entry 1). Local
// changes carry actor (KV), or a Loro peer id derived from it, so a
// replica's id survives restarts through --state as its actor does.
func openPeerEngine(ctx context.Context, kind, actor string) (peerEngine, error) {
	if kind != "loro" {
		kv, err := engine.NewKV(actor)
		if err != nil {
			return nil, err
		}
		return kvPeer{kv}, nil
	}
	cfg := loro.RuntimeConfig{}
	if dir, err := os.UserCacheDir(); err == nil {
		cfg.CacheDir = filepath.Join(dir, "ferry", "wazero")
	}
	rt, err := loro.NewRuntime(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("--engine loro: %w", err)
	}
	sum := sha256.Sum256([]byte(actor))
	peer := binary.LittleEndian.Uint64(sum[:8])>>1 | 1 // below 2^63, never 0 (0 asks for a random id)
	e, err := loro.New(ctx, rt, loro.Options{Peer: peer})
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("--engine loro: %w", err)
	}
	return loroPeer{e, rt}, nil
}

type kvPeer struct{ *engine.KV }

func (k kvPeer) setText(doc, key, val string) error { return k.Set(doc, key, []byte(val)) }
func (k kvPeer) hasKey(doc, key string) bool        { _, ok := k.Get(doc, key); return ok }
func (k kvPeer) texts(doc string) map[string]string { return k.Values(doc) }
func (k kvPeer) close(context.Context)              {}

type loroPeer struct {
	*loro.Engine
	rt *loro.Runtime
}

func (l loroPeer) setText(doc, key, val string) error {
	return l.Set(doc, key, loro.Value{Kind: loro.Text, Text: val})
}

func (l loroPeer) hasKey(doc, key string) bool { _, ok := l.Get(doc, key); return ok }

// texts shows the default collection's values as text.
func (l loroPeer) texts(doc string) map[string]string {
	out := map[string]string{}
	for k, v := range l.Values(doc, loro.DefaultCollection) {
		out[k] = showValue(v)
	}
	return out
}

// showValue is a value as one line of text: text as itself, numbers and
// booleans as JSON writes them, bytes as base64, a reference by its hash.
func showValue(v loro.Value) string {
	switch v.Kind {
	case loro.Text:
		return v.Text
	case loro.Null:
		return "null"
	case loro.Bool:
		return strconv.FormatBool(v.Bool)
	case loro.Int:
		return strconv.FormatInt(v.Int, 10)
	case loro.Float:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	case loro.Bytes:
		return base64.StdEncoding.EncodeToString(v.Bytes)
	case loro.Attachment:
		return "attachment " + v.Ref.Hash
	}
	return ""
}

func (l loroPeer) close(ctx context.Context) {
	_ = l.Engine.Close(ctx)
	_ = l.rt.Close(ctx)
}
