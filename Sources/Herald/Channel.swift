import HeraldWire

/// A channel name or pattern, built from typed segments so call sites need no string literals.
///
/// `Channel("car", 42, "moved")` is `car.42.moved`; `Channel("car", .one, "moved")` is the
/// pattern `car.*.moved`; `Channel("car", .rest)` is `car.>`. Validity is checked where the
/// channel is used (a publish to a pattern, or a segment holding a `.`, is
/// `HeraldClientError.badChannel`, thrown, never a crash), so building one cannot fail.
public struct Channel: Hashable, Sendable, CustomStringConvertible {
    /// The name as sent on the wire, e.g. `car.42.moved`.
    public let name: String

    /// Joins segments with `.`.
    /// - Parameter segments: strings, integers, UUIDs, `.one` (`*`) or `.rest` (`>`).
    public init(_ segments: any ChannelSegment...) {
        self.name = segments.map(\.segmentText).joined(separator: ".")
    }

    /// Uses a complete name or pattern as given, e.g. from a command line or a config file.
    /// - Parameter name: a dotted name such as `app.settings` or `chat.*`.
    public init(verbatim name: String) {
        self.name = name
    }

    /// This channel with more segments appended: `Channel("car", 42).appending("moved")`.
    /// - Parameter segments: the segments to add.
    /// - Returns: the longer channel.
    public func appending(_ segments: any ChannelSegment...) -> Channel {
        Channel(verbatim: ([name] + segments.map(\.segmentText)).joined(separator: "."))
    }

    /// The name.
    public var description: String { name }

    /// Whether this is a pattern (holds a `*` or `>` segment).
    public var isPattern: Bool {
        (try? ChannelName.validatePattern(Array(name.utf8))) ?? false
    }

    /// Checks a concrete name, as publishing requires.
    func validatedConcrete() throws(HeraldClientError) -> Channel {
        do {
            try ChannelName.validateConcrete(Array(name.utf8))
        } catch {
            throw .badChannel(error.message)
        }
        return self
    }

    /// Checks a name or pattern, as subscribing allows; returns whether it is a pattern.
    func validatedPattern() throws(HeraldClientError) -> Bool {
        do {
            return try ChannelName.validatePattern(Array(name.utf8))
        } catch {
            throw .badChannel(error.message)
        }
    }
}

/// A value that can be one segment of a channel name.
///
/// Conforming types render one segment; a rendering holding `.`, space, `*` or `>` makes the
/// channel invalid, which is reported when the channel is used.
public protocol ChannelSegment: Sendable {
    /// The segment as text.
    var segmentText: String { get }
}

extension String: ChannelSegment {
    /// The string itself.
    public var segmentText: String { self }
}

extension Substring: ChannelSegment {
    /// The substring as a string.
    public var segmentText: String { String(self) }
}

extension Int: ChannelSegment {
    /// The decimal digits.
    public var segmentText: String { String(self) }
}

extension Int64: ChannelSegment {
    /// The decimal digits.
    public var segmentText: String { String(self) }
}

extension UInt64: ChannelSegment {
    /// The decimal digits.
    public var segmentText: String { String(self) }
}

/// A wildcard segment of a pattern: `.one` (`*`) or `.rest` (`>`).
public struct Wildcard: ChannelSegment, Hashable {
    /// `*` or `>`.
    public let segmentText: String

    fileprivate init(_ text: String) {
        segmentText = text
    }
}

extension ChannelSegment where Self == Wildcard {
    /// `*`: exactly one segment, e.g. `Channel("car", .one, "moved")`.
    public static var one: Wildcard { Wildcard("*") }
    /// `>`: one or more trailing segments (last segment only), e.g. `Channel("car", .rest)`.
    public static var rest: Wildcard { Wildcard(">") }
}
