// SPDX-License-Identifier: MIT
// topJs > outerJs > midJs > leafJs, a hot leaf, for 2 s (e2e 57, 60).
function leafJs(n) { let x = 0; for (let i = 0; i < n; i++) x = (x * 31 + i) | 0; return x; }
function midJs(n) { return leafJs(n) ^ 1; }
function outerJs(n) { return midJs(n) ^ 2; }
function topJs() {
	const end = Date.now() + 2000;
	let t = 0;
	while (Date.now() < end) t += outerJs(100000);
	return t;
}
console.log(topJs() & 1);
