import HeraldWire

/// Renders a `MonitorSnapshot` as the JSON object of `GET /varz`.
///
/// The top level carries exactly the `stats` op's figures under the same keys (so a tool
/// written for `stats` reads `/varz` unchanged), plus `version`, `shutting_down` and a
/// `process` object with the process's own resource figures.
enum VarzRenderer {
    /// The JSON text, one line, ending in a newline.
    /// - Parameter snapshot: the figures to render.
    /// - Returns: UTF-8 JSON.
    static func render(_ snapshot: MonitorSnapshot) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        out.append(contentsOf: #"{"version":"#.utf8)
        out.appendJSONString(snapshot.version)
        out.append(contentsOf: #","shutting_down":"#.utf8)
        out.append(contentsOf: (snapshot.isStopping ? "true" : "false").utf8)
        for figure in snapshot.figures {
            out.append(UInt8(ascii: ","))
            out.appendJSONString(figure.name)
            out.append(UInt8(ascii: ":"))
            out.appendInt(figure.value)
        }
        if let process = snapshot.process {
            out.append(contentsOf: #","process":{"rss_bytes":"#.utf8)
            out.appendInt(process.residentBytes)
            out.append(contentsOf: #","virtual_bytes":"#.utf8)
            out.appendInt(process.virtualBytes)
            out.append(contentsOf: #","open_fds":"#.utf8)
            out.appendInt(process.openFDs)
            out.append(contentsOf: #","max_fds":"#.utf8)
            out.appendInt(process.maxFDs)
            out.append(contentsOf: #","cpu_us":"#.utf8)
            out.appendInt(process.cpuMicroseconds)
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: "}\n".utf8)
        return out
    }
}
