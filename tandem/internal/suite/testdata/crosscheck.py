#!/usr/bin/env python3
"""Independent cross-check of testdata/vectors/tandem-v1.json.

Recomputes the published vectors with Python's hashlib/hmac and the
`cryptography` package (OpenSSL), sharing no code with the Go suite,
including an RFC 9180 HPKE base-mode open written from the RFC.
Run from the repository root:  python3 tandem/suite/testdata/crosscheck.py
Not part of `go test` (it needs the `cryptography` package); see
docs/vectors.md.
"""
import base64, hashlib, hmac, json, struct, sys

from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

x = bytes.fromhex


def H(*parts):
    return hashlib.sha256(b"".join(parts)).digest()


def extract(salt, ikm):
    return hmac.new(salt or b"\0" * 32, ikm, hashlib.sha256).digest()


def expand(prk, info, n):
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out, i = out + t, i + 1
    return out[:n]


def kdf(ikm, salt, info, n):
    return expand(extract(salt, ikm), info.encode(), n)


def b32(b):
    return base64.b32encode(b).decode().lower().rstrip("=")


def raw(k):
    return k.public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)


# RFC 9180 base mode: DHKEM(X25519, HKDF-SHA256)=0x0020, HKDF-SHA256=0x0001, ChaCha20Poly1305=0x0003
KEM_ID = b"KEM" + struct.pack(">H", 0x20)
SUITE_ID = b"HPKE" + struct.pack(">HHH", 0x20, 1, 3)


def lextract(suite, salt, label, ikm):
    return hmac.new(salt or b"\0" * 32, b"HPKE-v1" + suite + label + ikm, hashlib.sha256).digest()


def lexpand(suite, prk, label, info, n):
    return expand(prk, struct.pack(">H", n) + b"HPKE-v1" + suite + label + info, n)


def hpke_open(sk_bytes, sealed, info, aad):
    enc, ct = sealed[:32], sealed[32:]
    sk = X25519PrivateKey.from_private_bytes(sk_bytes)
    dh = sk.exchange(X25519PublicKey.from_public_bytes(enc))
    kem_context = enc + raw(sk.public_key())
    eae = lextract(KEM_ID, b"", b"eae_prk", dh)
    shared = lexpand(KEM_ID, eae, b"shared_secret", kem_context, 32)
    psk_id_hash = lextract(SUITE_ID, b"", b"psk_id_hash", b"")
    info_hash = lextract(SUITE_ID, b"", b"info_hash", info)
    ctx = b"\x00" + psk_id_hash + info_hash
    secret = lextract(SUITE_ID, shared, b"secret", b"")
    key = lexpand(SUITE_ID, secret, b"key", ctx, 32)
    nonce = lexpand(SUITE_ID, secret, b"base_nonce", ctx, 12)
    return ChaCha20Poly1305(key).decrypt(nonce, ct, aad)


def main():
    d = json.load(open("testdata/vectors/tandem-v1.json", encoding="utf-8"))
    n = 0
    for u in d["users"]:
        us, uid = x(u["secret"]), x(u["uid"])
        assert raw(Ed25519PrivateKey.from_private_bytes(kdf(us, b"", "tandem/v1/user-sign", 32)).public_key()) == uid
        assert raw(X25519PrivateKey.from_private_bytes(kdf(us, b"", "tandem/v1/user-agree", 32)).public_key()).hex() == u["uka"]
        hk = kdf(us, b"", "tandem/v1/home", 32)
        assert hk.hex() == u["home_key"]
        assert b32(kdf(hk, b"", "tandem/v1/tag", 20)) == u["home_tag"]
        assert b32(kdf(uid, b"", "tandem/v1/inbox-tag", 20)) == u["inbox_tag"]
        assert H(b"tandem/v1/home", uid)[:16].hex() == u["home_scope"]
        assert H(b"tandem/v1/kid", x(u["uka"])).hex() == u["kid"]
        assert b32(us + H(us)[:3]) == u["backup_key"]
        n += 1
    for r in d["named_records"]:
        assert H(b"tandem/v1/named", r["name"].encode()).hex()[:32] == r["id"]
        n += 1
    for c in d["commitments"]:
        assert H(b"tandem/v1/commit", x(c["key"])).hex() == c["commit"]
        n += 1
    for c in d["collection_tags"]:
        assert b32(kdf(x(c["key"]), x(c["epoch"]), "tandem/v1/collection-tag", 20)) == c["tag"]
        n += 1
    for i in d["invites"]:
        s = x(i["secret"])
        assert raw(Ed25519PrivateKey.from_private_bytes(kdf(s, b"", "tandem/v1/invite-sign", 32)).public_key()).hex() == i["sign_pub"]
        ki = kdf(s, b"", "tandem/v1/invite-key", 32)
        assert ki.hex() == i["channel_key"] and b32(kdf(ki, b"", "tandem/v1/tag", 20)) == i["tag"]
        n += 1
    for p in d["pairings"]:
        P = x(p["p"])
        assert kdf(P, b"", "tandem/v1/pair-key", 32).hex() == p["key"]
        assert b32(kdf(P, b"", "tandem/v1/tag", 20)) == p["tag"]
        code = struct.unpack(">I", H(b"tandem/v1/pair-code", P, x(p["ek"]), x(p["n"]))[:4])[0] % 1000000
        assert "%06d" % code == p["code"]
        n += 1
    for e in d["envelopes"]:
        head = b"TNDM" + bytes([1, e["kind"]])
        mk = kdf(x(e["key"]), x(e["salt"]), "tandem/v1/msg", 32)
        ct = ChaCha20Poly1305(mk).encrypt(b"\0" * 12, x(e["plaintext"]), head + e["tag"].encode())
        assert (head + x(e["salt"]) + ct).hex() == e["envelope"]
        n += 1
    for e in d["inbox"]:
        us, env = x(e["recipient_secret"]), x(e["envelope"])
        agree = kdf(us, b"", "tandem/v1/user-agree", 32)
        uka = raw(X25519PrivateKey.from_private_bytes(agree).public_key())
        assert env[:6] == b"TNDM\x01\x02" and env[6:38] == H(b"tandem/v1/kid", uka)
        pt = hpke_open(agree, env[38:], b"tandem/v1/inbox", b"TNDM\x01\x02" + e["tag"].encode())
        assert pt.hex() == e["plaintext"]
        n += 1
    for r in d["pair_replies"]:
        pt = hpke_open(x(r["ek_secret"]), x(r["sealed"]), b"tandem/v1/pair", b"TANDEM-PAIR-V1" + x(r["uid"]) + x(r["ek"]))
        assert pt.hex() == r["user_secret"]
        n += 1
    for w in d["writes"]:
        k = Ed25519PrivateKey.from_private_bytes(kdf(x(w["author_secret"]), b"", "tandem/v1/user-sign", 32))
        f, el = w["field"].encode(), x(w["element"])
        si = b"TANDEM-WRITE-V1" + x(w["scope"]) + x(w["record"]) + struct.pack(">I", len(f)) + f
        si += bytes([w["op"]]) + struct.pack(">I", len(el)) + el + H(x(w["value"])) + raw(k.public_key())
        si += x(w["device"]) + struct.pack(">QH", w["millis"], w["counter"]) + x(w["ref"])
        for vv in (w["context"], w["base"]):
            si += struct.pack(">H", len(vv)) + b"".join(x(dv) + struct.pack(">QH", m, c) for dv, m, c in vv)
        assert si.hex() == w["sig_input"] and H(si).hex() == w["write_id"]
        assert k.sign(si).hex() == w["sig"]
        n += 1
    for inv in d["inventories"]:
        b = struct.pack(">I", len(inv["records"]))
        for r in inv["records"]:
            b += x(r["id"]) + struct.pack(">I", len(r["writes"])) + b"".join(x(w) for w in r["writes"])
        assert b.hex() == inv["bytes"] and H(b).hex() == inv["hash"]
        n += 1
    print("crosscheck: %d vectors agree" % n)


if __name__ == "__main__":
    sys.exit(main())
