/// CRC-32C (Castagnoli), the checksum of every record in the state files.
///
/// Why CRC-32C: it is what storage formats use for this job (iSCSI, ext4, LevelDB), it
/// detects every burst error up to 32 bits, and it needs no dependency. Computed with
/// slicing-by-8: eight 256-entry tables let the loop consume eight bytes per step.
public enum CRC32C {
    /// The reflected Castagnoli polynomial.
    static let polynomial: UInt32 = 0x82F6_3B78

    /// `tables[k * 256 + b]`: the CRC contribution of byte `b` followed by `k` zero bytes.
    static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ polynomial : crc >> 1 }
            tables[byte] = crc
        }
        for byte in 0..<256 {
            var crc = tables[byte]
            for k in 1..<8 {
                crc = tables[Int(crc & 0xFF)] ^ (crc >> 8)
                tables[k * 256 + byte] = crc
            }
        }
        return tables
    }()

    /// The CRC-32C of `bytes`.
    /// - Parameters:
    ///   - bytes: the data.
    ///   - seed: a previous result, to continue a checksum over several buffers.
    /// - Returns: the checksum.
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing seed: UInt32 = 0) -> UInt32 {
        var crc = ~seed
        var i = 0
        let count = bytes.count
        tables.withUnsafeBufferPointer { t in
            while i + 8 <= count {
                let low = bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self).littleEndian ^ crc
                let high = bytes.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self).littleEndian
                crc = t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                i += 8
            }
            while i < count {
                crc = t[Int((crc ^ UInt32(bytes[i])) & 0xFF)] ^ (crc >> 8)
                i += 1
            }
        }
        return ~crc
    }

    /// The CRC-32C of `bytes`.
    /// - Parameter bytes: the data.
    /// - Returns: the checksum.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
