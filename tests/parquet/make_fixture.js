// SPDX-License-Identifier: MIT
//
// Writes the Parquet split block Bloom filter fixture that
// tests/test_bloom_split.c checks bloomkit against, using an implementation
// of the Parquet specification that shares nothing with bloomkit: the
// SplitBlockBloomFilter of the npm package @dsnp/parquetjs (its block index,
// masks and block insert/check) and XXH64 from xxhash-wasm.
//
// Values are hashed as Parquet hashes them: XXH64 (seed 0) of the value's
// plain encoding, i.e. an INT64 as its 8 little-endian bytes, a BYTE_ARRAY
// (string) as its UTF-8 bytes without the length prefix. (parquetjs's own
// insert(value) would hash value.toString(), the decimal text of a number,
// which is not what Parquet writers do, so the script hashes and calls
// insertHash.)
//
// Two defects of parquetjs 1.8.9 are worked around and checked:
//  - init() fills every block with one shared Uint32Array, so all blocks
//    alias; the filter is made with SplitBlockBloomFilter.from() over a
//    zeroed buffer instead, which gives each block its own words.
//  - mask() multiplies the low hash word by a salt in floating point, which
//    is exact only below 2^53; the script recomputes every mask exactly
//    (BigInt, mod 2^32), refuses to write a fixture where an inserted
//    value's masks differ, and leaves out the (rare, ~1 in 2^17 words)
//    probes whose masks differ, so the fixture is the specification's bits.
//
// Usage (from tests/parquet): npm install && npm run fixture
// Output: ../data/parquet_sbbf.bin (the raw bitset, as stored in a Parquet
// file after the filter header) and ../data/parquet_sbbf.txt, one line per
// value: "add|probe int|str <value in hex of its plain encoding> <0|1>",
// the last field being parquetjs's check() answer for that value.
'use strict';
const fs = require('fs');
const path = require('path');
const Long = require('long');
const xxhash = require('xxhash-wasm');
const SBBF = require('@dsnp/parquetjs/dist/lib/bloom/sbbf').default;

const SALT = [0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7,
              0x2df1424b, 0x9efc4947, 0x5c6bfb31];

function int64Plain(v) {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(BigInt(v));
  return b;
}

// Deterministic values: a splitmix64 stream (no Math.random).
function* splitmix(seed) {
  let s = BigInt(seed);
  const M = (1n << 64n) - 1n;
  for (;;) {
    s = (s + 0x9e3779b97f4a7c15n) & M;
    let z = s;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M;
    yield z ^ (z >> 31n);
  }
}

async function main() {
  const out = process.argv[2] || '../data/parquet_sbbf.txt';
  const { h64Raw } = await xxhash();
  const numBytes = 2048; // 64 blocks: a power of two, as Parquet requires
  const filter = SBBF.from(Buffer.alloc(numBytes));
  if (filter.getNumFilterBlocks() !== numBytes / 32) throw new Error('blocks');

  const rng = splitmix(20261125);
  const adds = [], probes = [];
  // 700 INT64 values (small, negative, large) and 800 strings (ASCII and
  // multi-byte UTF-8) inserted; 5000 of each kind probed that were not.
  const ints = new Set();
  for (let i = 0; i < 200; i++) ints.add(BigInt(i - 100));
  while (ints.size < 700) ints.add(BigInt.asIntN(64, rng.next().value));
  for (const v of ints) adds.push(['int', int64Plain(v)]);
  for (let i = 0; i < 800; i++) {
    const s = i % 3 === 0 ? `row-${i}` : i % 3 === 1 ? `ключ-${i}-✓` : `user${rng.next().value}`;
    adds.push(['str', Buffer.from(s, 'utf8')]);
  }
  const seen = new Set(adds.map(([k, b]) => k + b.toString('hex')));
  while (probes.length < 10000) {
    const r = rng.next().value;
    const e = probes.length % 2
      ? ['int', int64Plain(BigInt.asIntN(64, r))]
      : ['str', Buffer.from(`absent-${r}`, 'utf8')];
    if (!seen.has(e[0] + e[1].toString('hex'))) probes.push(e);
  }

  const hashOf = (b) => Long.fromString(h64Raw(new Uint8Array(b), 0n).toString(16), true, 16);
  let mismatched = 0;
  const exactMask = (h) => {
    const key = BigInt(h.getLowBitsUnsigned());
    return SALT.map((s) => 1 << Number(((key * BigInt(s)) & 0xffffffffn) >> 27n));
  };
  for (const [, b] of adds) {
    const h = hashOf(b);
    const m = SBBF.mask(h), e = exactMask(h);
    for (let i = 0; i < 8; i++) if ((m[i] >>> 0) !== (e[i] >>> 0)) mismatched++;
    filter.insertHash(h);
  }
  if (mismatched) throw new Error(`${mismatched} parquetjs masks differ from the specification`);

  const lines = [];
  for (const [kind, b] of adds) {
    const found = filter.checkHash(hashOf(b));
    if (!found) throw new Error('parquetjs lost an inserted value');
    lines.push(`add ${kind} ${b.toString('hex')} 1`);
  }
  let positives = 0, dropped = 0;
  for (const [kind, b] of probes) {
    const h = hashOf(b);
    const m = SBBF.mask(h), e = exactMask(h);
    let differs = false;
    for (let i = 0; i < 8; i++) if ((m[i] >>> 0) !== (e[i] >>> 0)) differs = true;
    // Where parquetjs's float mask is wrong its answer is not the
    // specification's: such a probe is left out (and counted).
    if (differs) { dropped++; continue; }
    const found = filter.checkHash(h);
    positives += found ? 1 : 0;
    lines.push(`probe ${kind} ${b.toString('hex')} ${found ? 1 : 0}`);
  }

  const bitset = Buffer.alloc(numBytes);
  filter.getFilter().forEach((block, i) => {
    for (let w = 0; w < 8; w++) bitset.writeUInt32LE(block[w] >>> 0, i * 32 + w * 4);
  });
  fs.writeFileSync(out.replace(/\.txt$/, '.bin'), bitset);
  fs.writeFileSync(out, `# ${path.basename(__filename)}: @dsnp/parquetjs SplitBlockBloomFilter, ` +
    `${numBytes} bytes, ${adds.length} values added, ${probes.length - dropped} absent probes ` +
    `(${positives} false positives; ${dropped} left out where parquetjs's mask is not exact)\n` +
    lines.join('\n') + '\n');
  console.log(`wrote ${out}: ${adds.length} added, ${probes.length - dropped} probes, ` +
              `${positives} positive, ${dropped} dropped`);
}

main().catch((e) => { console.error(e); process.exit(1); });
