package protocol

import (
	"crypto/hmac"
	"crypto/sha512"
)

// OwnerKeys derives an owner's keys from its 32-byte secret as
// createAppOwner does: SLIP-21 nodes Evolu/OwnerIdBytes (first 16 bytes),
// Evolu/OwnerEncryptionKey, and Evolu/OwnerWriteKey (first 16 bytes).
func OwnerKeys(secret [32]byte) (id OwnerID, encryptionKey [32]byte, writeKey WriteKey) {
	idNode := SLIP21(secret[:], "Evolu", "OwnerIdBytes")
	copy(id[:], idNode[:16])
	encryptionKey = SLIP21(secret[:], "Evolu", "OwnerEncryptionKey")
	wk := SLIP21(secret[:], "Evolu", "OwnerWriteKey")
	copy(writeKey[:], wk[:16])
	return id, encryptionKey, writeKey
}

// SLIP21 derives the symmetric key at path from seed (SLIP-0021): the
// master node is HMAC-SHA512("Symmetric key seed", seed); each child is
// HMAC-SHA512(parent[0:32], 0x00 || label); the key is the node's last 32
// bytes.
func SLIP21(seed []byte, path ...string) [32]byte {
	node := hmacSHA512([]byte("Symmetric key seed"), seed)
	for _, label := range path {
		node = hmacSHA512(node[:32], append([]byte{0}, label...))
	}
	var k [32]byte
	copy(k[:], node[32:])
	return k
}

func hmacSHA512(key, msg []byte) []byte {
	m := hmac.New(sha512.New, key)
	m.Write(msg)
	return m.Sum(nil)
}
