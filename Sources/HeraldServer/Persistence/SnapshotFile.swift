import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

/// The snapshot format: encoding, and verification of a whole file before any of it is used.
///
/// Layout: `magic | generation u64 LE | CRC32C of both u32 LE`, then framed records
/// (`RecordFraming`), then an end record `0xFF | record count u64 | file CRC32C u32`, where the
/// file CRC covers every byte before the end record. Magic `HRLDSNP2`; files written before
/// the file CRC existed (`HRLDSNP1`, end record without it) are still read, checked by their
/// per-record CRCs, count and length.
///
/// Why verify before applying: a snapshot applied up to a damaged record and then followed by
/// the log rebuilds channels from records whose base is missing (an `append` on a list the
/// snapshot lost makes a list that never existed). So a snapshot is used whole or not at all.
enum SnapshotFile {
    /// The magic of snapshots with a whole-file CRC.
    static let magic: [UInt8] = Array("HRLDSNP2".utf8)
    /// The magic of snapshots without one (read, never written).
    static let legacyMagic: [UInt8] = Array("HRLDSNP1".utf8)
    /// Header bytes: magic, generation, header CRC.
    static let headerBytes = 20

    /// The complete snapshot bytes for a state.
    /// - Parameters:
    ///   - entries: every channel's state, tombstones included.
    ///   - revFloor: the store's rev floor, written last as a `forget` of the empty name.
    ///   - generation: the generation it starts (the log that follows it is `log.<generation>`).
    /// - Returns: the file's bytes.
    static func encode(_ entries: [[UInt8]: StoredState], revFloor: Int, generation: UInt64) -> [UInt8] {
        var bytes = header(generation)
        for (name, state) in entries {
            if state.hasContent {
                var content: [UInt8] = []
                state.appendContent(to: &content)
                RecordFraming.append(.set(channel: name, rev: state.rev, value: content), to: &bytes)
            } else {
                RecordFraming.append(.delete(channel: name, rev: state.rev), to: &bytes)
            }
        }
        if revFloor > 0 { RecordFraming.append(.forget(channel: [], rev: revFloor), to: &bytes) }
        let count = entries.count + (revFloor > 0 ? 1 : 0)
        RecordFraming.appendEnd(count: count, fileChecksum: CRC32C.checksum(bytes), to: &bytes)
        return bytes
    }

    /// The header for `generation`, checksummed: the generation names the log to replay.
    static func header(_ generation: UInt64) -> [UInt8] {
        var bytes = magic
        RecordFraming.putLE(generation, bytes: 8, to: &bytes)
        RecordFraming.putLE(UInt64(CRC32C.checksum(bytes)), bytes: 4, to: &bytes)
        return bytes
    }

    /// Checks a whole snapshot and decodes it; nothing is applied anywhere.
    /// - Parameter bytes: the file's bytes.
    /// - Returns: the generation and records, or where and why the file is damaged.
    static func verify(_ bytes: [UInt8]) -> Result<SnapshotContents, SnapshotDamage> {
        bytes.withUnsafeBytes { raw in
            guard let (generation, hasFileChecksum) = readHeader(raw) else {
                return .failure(SnapshotDamage(offset: 0, reason: "not a heraldd snapshot or a damaged header"))
            }
            var records: [(offset: Int, record: StateRecord)] = []
            var offset = headerBytes
            while let range = RecordFraming.payload(in: raw, at: offset) {
                let payload = UnsafeRawBufferPointer(rebasing: raw[range])
                if payload.count >= 1 && payload[0] == RecordFraming.endMarker {
                    guard checkEnd(payload, raw, at: offset, end: range.upperBound, count: records.count,
                                   hasFileChecksum: hasFileChecksum) else { break }
                    return .success(SnapshotContents(generation: generation, records: records))
                }
                guard let record = StateRecord.decode(payload) else { break }
                records.append((offset, record))
                offset = range.upperBound
            }
            let reason = offset >= raw.count ? "ends before its end record" : "damaged record"
            return .failure(SnapshotDamage(offset: offset, reason: reason))
        }
    }

    /// The generation and whether the file has a whole-file CRC, nil when the header is not valid.
    private static func readHeader(_ raw: UnsafeRawBufferPointer) -> (UInt64, Bool)? {
        guard raw.count >= headerBytes else { return nil }
        let found = Array(raw[0..<8])
        guard found == magic || found == legacyMagic,
              UInt32(RecordFraming.readLE(raw, at: 16, bytes: 4))
                == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<16])) else { return nil }
        return (RecordFraming.readLE(raw, at: 8, bytes: 8), found == magic)
    }

    /// Whether the end record at `offset` closes the file: right count, last bytes of the
    /// file, and (new format) the CRC of everything before it.
    private static func checkEnd(
        _ payload: UnsafeRawBufferPointer, _ raw: UnsafeRawBufferPointer, at offset: Int, end: Int, count: Int,
        hasFileChecksum: Bool
    ) -> Bool {
        guard payload.count == (hasFileChecksum ? 13 : 9), end == raw.count,
              Int(RecordFraming.readLE(payload, at: 1, bytes: 8)) == count else { return false }
        guard hasFileChecksum else { return true }
        let expected = UInt32(RecordFraming.readLE(payload, at: 9, bytes: 4))
        return expected == CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<offset]))
    }

    /// What can still be read from a damaged snapshot, only to name the channels a repair
    /// could not rebuild (never applied): the channels of CRC-valid records, found by
    /// scanning past damage byte by byte, and how many records could not be read at all
    /// (nil when the end record, which holds the count, is unreadable too).
    /// - Parameter bytes: the file's bytes.
    /// - Returns: the readable records' channels and revs, and the unreadable count.
    static func salvageNames(_ bytes: [UInt8]) -> (channels: [[UInt8]: Int], unreadable: Int?) {
        bytes.withUnsafeBytes { raw in
            var channels: [[UInt8]: Int] = [:]
            var found = 0
            var expected: Int?
            var offset = min(headerBytes, raw.count)
            while offset < raw.count {
                guard let range = RecordFraming.payload(in: raw, at: offset) else {
                    offset += 1
                    continue
                }
                let payload = UnsafeRawBufferPointer(rebasing: raw[range])
                if payload.count >= 9 && payload[0] == RecordFraming.endMarker {
                    expected = Int(RecordFraming.readLE(payload, at: 1, bytes: 8))
                } else if let record = StateRecord.decode(payload) {
                    found += 1
                    if !record.channel.isEmpty { channels[record.channel] = record.rev }
                } else {
                    offset += 1
                    continue
                }
                offset = range.upperBound
            }
            return (channels, expected.map { max(0, $0 - found) })
        }
    }
}

extension SnapshotFile {
    /// The generation in a snapshot file's header, nil when the file is missing or its
    /// header does not check out. Reads only the header.
    /// - Parameter path: the snapshot file.
    /// - Returns: the generation, or nil.
    static func generation(ofFile path: String) -> UInt64? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: headerBytes)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, headerBytes) }
        guard count == headerBytes else { return nil }
        return bytes.withUnsafeBytes { readHeader($0)?.0 }
    }
}
