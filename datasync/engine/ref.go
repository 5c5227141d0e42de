package engine

import "github.com/ferry-sync/ferry/datasync/internal/attach"

// Ref is an attachment reference, the value a document holds for a blob
// kept outside it: the blob's content address and size. A node fetches the
// bytes from the peer that holds them; the engines store and merge the Ref
// like any other value (KV.SetRef, loro.Engine.SetRef).
type Ref = attach.Ref
