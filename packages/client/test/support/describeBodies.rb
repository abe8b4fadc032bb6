# Decodes cell bodies as the Ruby gem does and prints what msgpack-ruby made of each.
#
# For the property tests (test/properties/gem.test.ts): stdin has one body a line, its bytes in
# hex, as the test read them from the content tables with plain SQL (where the gem reads them).
# For each body it prints one JSON line {"gem": ..., "withExtensions": ...}: "gem" is
# MessagePack.unpack(body), the gem's own call (Shameless::Cell#deserialize_body), and
# "withExtensions" the same with allow_unknown_ext: true, what a gem user gets who reads
# extension types (msgpack-ruby registers none by default, the timestamp included). Each is the
# typed description of messagePackTrees.ts (`described`), or ["error", class, message].
require 'json'
require 'msgpack'

def describe(value)
  case value
  when nil then ['nil']
  when true, false then ['bool', value]
  when Integer then ['int', value.to_s]
  when Float then ['float', value.nan? ? 'NaN' : [value].pack('G').unpack1('H*')]
  when String
    # msgpack-ruby reads a str as UTF-8 text and a bin as bytes (ASCII-8BIT).
    if value.encoding == Encoding::BINARY
      ['bin', value.unpack1('H*')]
    elsif value.encoding == Encoding::UTF_8
      ['str', value]
    else
      ['unexpected', "String in #{value.encoding}"]
    end
  when MessagePack::ExtensionValue then ['ext', value.type, value.payload.unpack1('H*')]
  when Array then ['array', value.map { |item| describe(item) }]
  when Hash then ['map', value.map { |key, item| [describe(key), describe(item)] }]
  else ['unexpected', value.class.name]
  end
end

def decoded(bytes, **options)
  describe(MessagePack.unpack(bytes, **options))
rescue StandardError => e
  ['error', e.class.name, e.message]
end

$stdin.each_line do |line|
  bytes = [line.strip].pack('H*')
  puts JSON.generate(
    'gem' => decoded(bytes),
    'withExtensions' => decoded(bytes, allow_unknown_ext: true)
  )
end
