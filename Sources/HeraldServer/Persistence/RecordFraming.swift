import HeraldBroker

/// The framing of records in the state files: `length u32 LE | CRC32C u32 LE | payload`.
///
/// Why length and CRC per record: a crash can tear the last write anywhere, and a disk can
/// flip bits anywhere; the length says where the next record starts, the CRC says whether
/// this one is what was written.
enum RecordFraming {
    /// Bytes before each payload.
    static let headerBytes = 8
    /// A payload longer than this is taken for damage, not a record (a value is at most
    /// `max_line` bytes, itself at most 256 MiB).
    static let maxPayload = 1 << 29
    /// The first byte of a snapshot's end record (`appendEnd`).
    static let endMarker: UInt8 = 0xFF

    /// Appends one framed record.
    static func append(_ record: StateRecord, to out: inout [UInt8]) {
        let headerAt = out.count
        out.append(contentsOf: [UInt8](repeating: 0, count: headerBytes))
        record.encode(into: &out)
        seal(out: &out, headerAt: headerAt)
    }

    /// Appends a snapshot's end record, which proves the snapshot complete: `0xFF | record
    /// count u64 | CRC32C u32 of every byte before the end record`.
    static func appendEnd(count: Int, fileChecksum: UInt32, to out: inout [UInt8]) {
        let headerAt = out.count
        out.append(contentsOf: [UInt8](repeating: 0, count: headerBytes))
        out.append(endMarker)
        putLE(UInt64(count), bytes: 8, to: &out)
        putLE(UInt64(fileChecksum), bytes: 4, to: &out)
        seal(out: &out, headerAt: headerAt)
    }

    /// Fills in the length and CRC of the payload that follows `headerAt`.
    private static func seal(out: inout [UInt8], headerAt: Int) {
        let payloadAt = headerAt + headerBytes
        let length = out.count - payloadAt
        let crc = out.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[payloadAt...])) }
        for k in 0..<4 {
            out[headerAt + k] = UInt8(truncatingIfNeeded: UInt32(length) >> UInt32(8 * k))
            out[headerAt + 4 + k] = UInt8(truncatingIfNeeded: crc >> UInt32(8 * k))
        }
    }

    /// Appends the low `bytes` bytes of `value`, little-endian.
    static func putLE(_ value: UInt64, bytes: Int, to out: inout [UInt8]) {
        for k in 0..<bytes { out.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * k))) }
    }

    /// Reads `count` bytes at `offset` as a little-endian integer.
    static func readLE(_ bytes: UnsafeRawBufferPointer, at offset: Int, bytes count: Int) -> UInt64 {
        var value: UInt64 = 0
        for k in 0..<count { value |= UInt64(bytes[offset + k]) << UInt64(8 * k) }
        return value
    }

    /// The payload of the frame at `offset` when the frame is whole and its CRC matches.
    static func payload(in bytes: UnsafeRawBufferPointer, at offset: Int) -> Range<Int>? {
        guard bytes.count - offset >= headerBytes else { return nil }
        let length = Int(readLE(bytes, at: offset, bytes: 4))
        guard length >= 1, length <= maxPayload, bytes.count - offset - headerBytes >= length else { return nil }
        let start = offset + headerBytes
        let crc = UInt32(truncatingIfNeeded: readLE(bytes, at: offset + 4, bytes: 4))
        guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[start..<(start + length)])) == crc else { return nil }
        return start..<(start + length)
    }

    /// Whether a whole, CRC-valid state record starts anywhere after `offset`: tells damage
    /// in the middle of a log (valid records follow) from a torn tail (nothing does).
    static func validRecordFollows(in bytes: UnsafeRawBufferPointer, after offset: Int) -> Bool {
        var at = offset + 1
        while at + headerBytes < bytes.count {
            if let range = payload(in: bytes, at: at),
               StateRecord.decode(UnsafeRawBufferPointer(rebasing: bytes[range])) != nil {
                return true
            }
            at += 1
        }
        return false
    }
}

/// The records of a log file and where it stops being valid.
struct LogScan {
    /// The records with the offset each starts at.
    var records: [(offset: Int, record: StateRecord)] = []
    /// Offset just past the last valid record.
    var validEnd = 0
    /// Where the first bad record starts, nil when the whole file is valid.
    var damageAt: Int?
    /// Whether valid records follow the damage (corruption in the middle, not a torn tail).
    var damageIsInTheMiddle = false

    /// Reads every record of a log file's bytes.
    static func scan(_ bytes: UnsafeRawBufferPointer) -> LogScan {
        var scan = LogScan()
        var offset = 0
        while offset < bytes.count {
            guard let range = RecordFraming.payload(in: bytes, at: offset),
                  let record = StateRecord.decode(UnsafeRawBufferPointer(rebasing: bytes[range])) else {
                scan.damageAt = offset
                scan.damageIsInTheMiddle = RecordFraming.validRecordFollows(in: bytes, after: offset)
                return scan
            }
            scan.records.append((offset, record))
            offset = range.upperBound
            scan.validEnd = offset
        }
        return scan
    }
}
