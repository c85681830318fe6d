import Testing
@testable import HeraldWire

@Test(arguments: [
    ("a.b", "a.b", true), ("a.b", "a.c", false), ("a.*", "a.b", true), ("a.>", "a", false),
    ("a.>", "a.b.c", true), ("cars.>", "cars.*.moved", true), ("cars.>", "boats.>", false),
    (">", "a", true), ("*.b", "a.*", true), ("*.b", "a.*.c", false), ("a.*", "a.b.c", false),
    ("*", "*.*", false), (">", "*.*", true), (">", "$sys.x", false), ("$sys.>", "$sys.client.connected", true),
    ("*.x", "$sys.x", false), ("a.b", "a.b.c", false),
])
func patternOverlapIsSymmetricAndExact(a: String, b: String, expected: Bool) {
    #expect(ChannelName.overlaps(Array(a.utf8), Array(b.utf8)) == expected, "\(a) ~ \(b)")
    #expect(ChannelName.overlaps(Array(b.utf8), Array(a.utf8)) == expected, "\(b) ~ \(a)")
}

@Test func stringArrayDecodesEveryElementWithEscapes() throws {
    try ScanFixture.scan(#"{"subs":[ "c1/a" , "c2/\u00e9\n",""]}"#) { scanner throws in
        let values = try scanner.stringArray(.subs)
        #expect(values == [Array("c1/a".utf8), Array("c2/\u{e9}\n".utf8), []])
    }
    try ScanFixture.scan(#"{"subs":[ ]}"#) { scanner throws in
        #expect(try scanner.stringArray(.subs) == [])
    }
    try ScanFixture.scan(#"{"subs":null}"#) { scanner throws in
        #expect(try scanner.stringArray(.subs) == nil)
    }
}

@Test(arguments: [#"{"subs":"x"}"#, #"{"subs":["a",1]}"#, #"{"subs":[["a"]]}"#, #"{"subs":{}}"#])
func stringArrayOfWrongShapeIsBadField(line: String) throws {
    let error = try ScanFixture.accessorError(line) { scanner throws(HeraldError) in
        _ = try scanner.stringArray(.subs)
    }
    #expect(error?.code == .badField)
}
