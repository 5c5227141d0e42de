// Package datasync replicates documents between peers: Ferry's
// implementation of data-sync-v1 (the __DATA_V1__ layer).
//
// An app brings a document engine (engine.KV, engine/loro, or its own that
// passes engine/enginetest), opens a Node over it, and links it to a peer:
//
//	key, _ := datasync.GenerateKey()             // keep key.PrivateBytes()
//	docs, _ := engine.NewKV("laptop")            // the engine keeps the documents
//	n, err := datasync.Open("notes.state", docs, key, datasync.Options{Actor: "laptop"})
//	go n.Serve(ctx, ln, func(p datasync.PublicKey) bool { return p == phone })
//	// or: n.Connect(ctx, "phone:7000", phone)
//	n.Update(ctx, "notes", func(e engine.Engine) error { return docs.Set("notes", "title", []byte("Groceries")) })
//	defer n.Close()                              // saves the state file
//
// A Node owns one 1:1 space: its state file (document snapshots, the
// documents peers named), the quarantine of blobs that ended a process
// while the engine imported them, the blob store, and every link. Links
// are Noise IK over TCP, authenticated by the peers' static keys; after the
// handshake each side says which encodings it speaks (its capabilities),
// so two engines that cannot read each other are refused by name. Reads go
// to the engine directly; writes go through Update, which sends them to
// every connected peer. Every error is an *Error with a Code.
//
// The protocol parts are internal: the frame codec (internal/frame), the
// per-peer exchange and group scope (internal/exchange), attachments
// (internal/attach), the media path (internal/media), the transport
// (internal/transport), one link (internal/replica) and the quarantine
// (internal/quarantine).
//
// The reference implementation runs these frames inside MLS with the Loro
// engine; neither exists in Go here. Ferry implements the wire contract
// exactly (testdata/datasync/data-sync-v1.vectors.json passes in full),
// keeps the engine behind an interface, names its own encoding with its own
// frame version (docs/decisions/datasync-encoding.md), and takes the space
// from an authenticated transport (Noise IK via github.com/flynn/noise, the
// only non-standard dependency). The codec, the engine, the exchange and the
// media path are written by hand: no library does them.
//
// # Where each MUST is enforced
//
// §Frames
//   - absent reply/partial read as false: frame.Parse (fields.flag);
//     frame.TestVectorsParseDefaults.
//   - read v before parsing the body: frame.ReadVersion, frame.Parse;
//     frame.TestVersionReadFirst.
//   - consume a frame of unknown version without surfacing it:
//     exchange.Session.Receive; exchange.TestUnknownVersionConsumed; a v
//     that is not a JSON integer ("1", 1.0) is an unknown version:
//     frame.TestNonIntegerVersionIsUnknown,
//     exchange.TestQuotedVersionNotActedOn.
//   - a peer that has not advertised an encoding is not sent one:
//     frame.Gate, exchange.Session.route; exchange.TestGatedPeerSentNothing,
//     frame.TestGates.
//
// §Group scope
//   - no group frame unless every other member speaks entry 2:
//     exchange.Group.route; exchange.TestGroupGateAllMembers.
//   - a change received from a group is not pushed back into it:
//     exchange.Session.answerDelta (answers only ever address the sender);
//     exchange.TestGroupNoPushBack.
//   - offers, their answers and snapshots addressed to the member that
//     asked: exchange.Session.to; exchange.TestGroupAnswersAddressed.
//   - bound addressed frames, promote the next roster-wide:
//     exchange.Group.route; exchange.TestGroupAddressedBound (with
//     testnet.GroupNet's forward-distance window); across restarts of the
//     sender (a new Group promotes its first addressed frame):
//     exchange.TestGroupBoundAcrossSenderRestarts.
//   - withhold when the bound is reached and the gate is closed:
//     exchange.TestGroupBoundWithGateClosed.
//
// §Exchange and §Termination
//   - an offer marked reply is not answered with an offer:
//     exchange.Session.answerOffer; exchange.TestTableOfferReply,
//     exchange.TestRandomizedConvergence (a converged round costs exactly
//     one offer and one reply per direction).
//   - a created document asks for its contents on the same leg (the
//     counter-offer, or a targeted offer reply:true partial:true):
//     exchange.TestTableOfferAsking, exchange.TestTableOfferReply.
//   - partial on every frame carrying less than everything:
//     exchange.Session.offer; exchange.TestSplitOffersAndUntrimmedAnswers.
//   - no inference from a partial frame: exchange.TestPartialOfferNoInference.
//   - every chain of answers is finite, every row of the table:
//     exchange.TestTableOfferAsking, TestTableOfferReply,
//     TestTableDeltaTerminal, TestTableDeltaMissingPredecessor,
//     TestTableDeltaTrimmedHistory, TestTableSnapTerminal, TestTableNeedSnap;
//     the optional flush: exchange.Session.flushFor (unsent commits),
//     exchange.Session.flushEngine (an engine's pending edits,
//     engine.Flusher); exchange.TestFlushOnce,
//     exchange.TestFlushFailureInForceNoOffer.
//   - the optional version offer after a recovered flush failure, at most
//     one, never while the failure is in force:
//     exchange.Session.offerAfterFold, engine.KV (Stage, Flush, Persist;
//     an applied import folds pending edits);
//     exchange.TestFlushFailureOffersOnce,
//     exchange.TestFlushFailureInForceNoOffer,
//     exchange.TestRandomizedConvergenceFlakyStorage (traffic still stops,
//     the converged round costs the same);
//     docs/decisions/datasync-flush-offer.md.
//   - answers are not trimmed to the names the inbound frame carried:
//     exchange.TestSplitOffersAndUntrimmedAnswers.
//   - deletion is not represented: a document dropped on one side
//     (engine.KV.Drop) is recreated and refilled by the rules above;
//     exchange.TestDroppedDocumentComesBack.
//
// §Bounds
//   - at most 1,024 documents on peers' say-so, none for local creation:
//     exchange.Space.admit; exchange.TestPeerNamedCeiling. The set survives
//     reconnections (one Space per process, replica.NewInSpace) and
//     restarts (Space.PeerNamedDocs, Space.RestorePeerNamed, saved with
//     ferry peer --state): exchange.TestPeerNamedCeilingSurvivesRestart,
//     cmd/ferry.TestPeerStateKeepsPeerNamedCeiling;
//     docs/decisions/datasync-peer-state.md.
//   - 32 KiB of document bytes per frame, checked before decoding:
//     frame.decodeBudgeted; frame.TestBudgetBeforeDecoding,
//     exchange.TestBudgetReported. Offers are cut by their exact encoded
//     size (escaped names, any version weight) and nothing over a bound is
//     sent (frame.Marshal): exchange.TestOfferNamesNeedingEscapes,
//     TestOfferLargeVersions, TestCatchUpFrameBound; a peer's over-bound
//     frame is reported:
//     exchange.TestOverBoundFramesReported.
//
// §Attachments
//   - name and mime absent rather than null: attach.Ref.Marshal;
//     attach.TestVectorsReferences, attach.TestWriteBounds.
//   - hash exactly 64 lowercase hex, never case-folded; 0 < size ≤ 2^63−1;
//     name ≤ 256 and mime ≤ 255 bytes; checked on write and on read, a
//     failing reference reads as absent; unknown fields ignored; wrong types
//     and unknown kinds read as absent: attach.Ref.Check, attach.Read;
//     attach.TestReadBounds, attach.TestWriteBounds, attach.FuzzRead.
//   - size is not an allocation hint: nothing allocates by Ref.Size; the
//     media receiver allocates by bytes received (media.Receiver.data).
//   - name is never a path: nothing in datasync opens a file by it.
//   - no assumption about a peer's file-size limit: media.Receiver.MaxTotal
//     is local only.
//   - bounded repeats on both sides: attach.Fetcher.Fetch,
//     attach.Holder.NeedBlob; attach.TestRepeatBounds; the holder also
//     bounds distinct hashes per peer and in total within a window, shared
//     by the links of a space (attach.Acts): attach.TestHolderHashFlood,
//     attach.TestHoldersShareActs.
//   - no second transfer of bytes in flight to that peer: attach.Holder,
//     media.Sender.SendData; attach.TestNoDuplicateTransfer,
//     media.TestNoSecondTransferInFlight.
//   - arriving bytes verified against the hash: attach.Fetcher.Complete;
//     attach.TestHashVerified.
//   - unrequested bytes discarded, refused at identification, the rest of
//     the transfer not allowed to proceed: attach.Fetcher.Judge,
//     media.Receiver.identify; attach.TestUnrequestedRefused,
//     media.TestEarlyChunksReleasedOnRefusal.
//   - expiry timed from the last sign of progress: attach.Fetcher.Progress,
//     attach.Fetcher.Expire; attach.TestExpiryFromLastProgress; chunks
//     before chunk 0 are no sign of progress:
//     attach.TestEarlyChunksAreNoProgress.
//   - no assumption of order on the transport: media.Receiver checks
//     completion whenever a piece arrives, chunk 0 included;
//     media.TestReorderedTransfersDelivered,
//     attach.TestFetchOverReorderedMediaPath, media.FuzzReceiverReordered.
//   - a fetch refused for lack of entry 3 records nothing that could
//     admit bytes: replica.Link.Fetch; replica.TestRefusedFetchAdmitsNothing.
//   - a fetched blob is never surfaced as a file or reported as a transfer:
//     media.Receiver (Data and File never mix), attach.Store;
//     media.TestDataNeverSurfacesAsFile, attach.TestFetchOverMediaPath.
//   - in a group, fetching reports that it cannot be done:
//     attach.Fetcher (Group); attach.TestGroupFetchReported.
//
// §Documents too large for a frame
//   - entry 3 and 1:1 only: exchange.Session.snapshot, exchange.Group.route;
//     exchange.TestOversizedDocument, exchange.TestGroupNoMediaPath.
//   - a sender does not carry a document larger than one record:
//     exchange.Session.snapshot (MaxRecordBytes); exchange.TestOversizedDocument.
//   - a receiver refuses one at identification rather than buffering it:
//     replica.Link.judge; replica.TestOversizedSnapshotRefused,
//     media.TestRefusedAtIdentification.
//   - unsolicited by design: replica.Link.judge admits snapshots without a
//     request; replica.TestLinkOverPipe, replica.TestLinkOverNoiseTCP.
//
// §Delivery
//   - a blob is judged before the engine sees it, and blobs in flight are
//     recorded on disk so one that ends the process cannot end it again:
//     exchange.Session.importGuarded (every delta, snap and media-path
//     snapshot), quarantine.Dir (written and fsynced before the engine
//     call, quarantined when found on open), the digest attach.Digest
//     (attach.TestVectorsDigests); a quarantined blob is refused and
//     reported, other blobs still import: exchange.TestQuarantineAfterCrash,
//     replica.TestQuarantineAcrossCrash (a helper process dies in the
//     engine), cmd/ferry.TestPeerQuarantine (ferry peer --state keeps
//     STATE.quarantine/); the list is bounded (quarantine.MaxQuarantined,
//     oldest dropped): quarantine.TestQuarantineBounded;
//     docs/decisions/datasync-quarantine.md.
//
// §Reporting
//   - a document that cannot replicate is reported (exchange.Report, not a
//     log line): exchange.TestBudgetReported, TestOversizedDocument,
//     TestPeerNamedCeiling, TestTableDeltaTrimmedHistory,
//     TestTableDeltaTerminal, replica.TestOversizedSnapshotRefused; a
//     quarantined blob and a storage failure are reported too
//     (exchange.TestQuarantineAfterCrash, TestFlushFailureOffersOnce).
//
// §The data purpose
//   - not application-settable: datasync/internal/media cannot be imported
//     outside datasync, and media.Sender.SendFile has no purpose.
//   - shipped under an envelope version that covers it; unknown versions
//     refused: media.ParseHeader; media.TestUnknownEnvelopeRefused.
//   - only sent to a peer with entry 3: exchange.Session.route,
//     replica.Link.Fetch; exchange.TestOversizedDocument.
//   - never sent unmarked when chunk 0 cannot be sealed:
//     media.Sender.transfer; media.TestUnsealableChunk0Abandons.
//   - fixed by the first chunk 0: media.Receiver.identify;
//     media.TestPurposeFixedByFirstChunk0.
//
// §The space is derived
//   - no frame names a space: a Session is built for one space and one
//     peer; transport.Conn.Peer is the authenticated key
//     (transport.TestNoiseRoundTripAndIdentity), and a listener admits only
//     the expected key (transport.TestNoiseRejectsUnknownInitiator).
package datasync
