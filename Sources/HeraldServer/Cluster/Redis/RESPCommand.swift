/// Encodes one Redis command as RESP (an array of bulk strings), the form hiredis's
/// `redisAsyncFormattedCommand` sends as is. Arguments are bytes, so channel names, event
/// frames and scripts go out without any escaping.
enum RESPCommand {
    /// `*N\r\n` then `$len\r\nbytes\r\n` per argument.
    static func encode(_ arguments: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 + arguments.reduce(0) { $0 + $1.count + 16 })
        header(UInt8(ascii: "*"), arguments.count, into: &out)
        for argument in arguments {
            header(UInt8(ascii: "$"), argument.count, into: &out)
            out.append(contentsOf: argument)
            out.append(contentsOf: [13, 10])
        }
        return out
    }

    /// The same, from strings.
    static func encode(_ arguments: [String]) -> [UInt8] {
        encode(arguments.map { Array($0.utf8) })
    }

    private static func header(_ kind: UInt8, _ count: Int, into out: inout [UInt8]) {
        out.append(kind)
        out.append(contentsOf: Array(String(count).utf8))
        out.append(contentsOf: [13, 10])
    }
}
