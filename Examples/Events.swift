import Herald

// Event types the examples share; the tests use these same types (Tests/HeraldTests/Fixtures.swift).

/// A chat line on `chat.lobby`.
public struct ChatLine: HeraldEvent, Equatable {
    public static let channel = Channel("chat", "lobby")
    public var text: String
    public var n: Int

    /// A line with its text and number.
    public init(text: String, n: Int) {
        self.text = text
        self.n = n
    }
}

/// A car's move; its home channel is the pattern over every car's instance channel.
public struct CarMoved: HeraldEvent, Equatable {
    public static let channel = Channel("car", .one, "moved")
    public var x: Int

    /// A move to `x`.
    public init(x: Int) { self.x = x }
}

/// Instance channels of cars, built from typed parts.
public enum Car {
    /// The instance channel of car `id`'s moves.
    public static func moved(id: Int) -> Topic<CarMoved> { Topic("car", id, "moved") }
}
