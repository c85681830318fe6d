print("herald: not yet")
