// Package bip39 converts 32-byte secrets to and from BIP-39 English
// mnemonics, as @evolu/common's ownerSecretToMnemonic and
// mnemonicToOwnerSecret do (@scure/bip39 with the English wordlist): 24
// words, the last 8 bits of which are the first byte of the entropy's
// SHA-256.
package bip39

import (
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// english is the BIP-39 English wordlist (SHA-256
// 2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda).
//
//go:embed english.txt
var english string

// Words is the number of words of a 32-byte secret's mnemonic.
const Words = 24

// ErrInvalid is wrapped by the errors of FromMnemonic.
var ErrInvalid = errors.New("invalid mnemonic")

func wordlist() []string { return strings.Split(strings.TrimSuffix(english, "\n"), "\n") }

// ToMnemonic returns the mnemonic of a 32-byte secret.
func ToMnemonic(secret [32]byte) string {
	words := wordlist()
	sum := sha256.Sum256(secret[:])
	bits := append(secret[:], sum[0]) // 264 bits: 24 words of 11
	out := make([]string, Words)
	for i := range out {
		v := 0
		for b := i * 11; b < i*11+11; b++ {
			v = v<<1 | int(bits[b/8]>>(7-b%8)&1)
		}
		out[i] = words[v]
	}
	return strings.Join(out, " ")
}

// FromMnemonic returns the secret of a 24-word mnemonic (NFKD-normalized,
// words separated by single spaces as @scure/bip39 requires; surrounding
// and repeated white space are tolerated), checking its checksum.
func FromMnemonic(m string) ([32]byte, error) {
	var secret [32]byte
	fields := strings.Fields(norm.NFKD.String(m))
	if len(fields) != Words {
		return secret, fmt.Errorf("%w: %d words, want %d", ErrInvalid, len(fields), Words)
	}
	index := make(map[string]int, 2048)
	for i, w := range wordlist() {
		index[w] = i
	}
	var bits [33]byte
	for i, w := range fields {
		v, ok := index[w]
		if !ok {
			return secret, fmt.Errorf("%w: %q is not a BIP-39 English word", ErrInvalid, w)
		}
		for j := range 11 {
			if v>>(10-j)&1 == 1 {
				b := i*11 + j
				bits[b/8] |= 1 << (7 - b%8)
			}
		}
	}
	copy(secret[:], bits[:32])
	if sum := sha256.Sum256(secret[:]); sum[0] != bits[32] {
		return [32]byte{}, fmt.Errorf("%w: checksum does not match (a word is wrong or out of order)", ErrInvalid)
	}
	return secret, nil
}
