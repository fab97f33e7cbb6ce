// SPDX-License-Identifier: MIT
// Loads a flame graph SVG of `stackpulse report --format=flamegraph` in headless Chromium
// (Debian's, found on PATH, driven by playwright-core) and uses it as a person would:
// click a frame to zoom, reset, search for a function, hover for the tooltip, screenshot.
//
// Usage: node flamegraph.mjs SVG ZOOM-FRAME SEARCH-TERM SCREENSHOT.png
// ZOOM-FRAME names a frame narrower than the graph; '-' skips the zoom checks.
// Prints the e2e result lines ("ok: ", "FAIL: ", "skip: "); exits 1 when a check failed.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { check, fail, failed, launch, ok, watch } from './chromium.mjs';

const [svgPath, zoomName, term, shotPath] = process.argv.slice(2);
if (!shotPath) {
	console.log('FAIL: usage: node flamegraph.mjs SVG ZOOM-FRAME SEARCH-TERM SCREENSHOT.png');
	process.exit(1);
}

const { context, close } = await launch('the flame graph');
// A share as the graph prints it: one decimal, two below 1%.
const pct = (n, of) => { const p = of ? 100 * n / of : 0; return `${p.toFixed(p > 0 && p < 1 ? 2 : 1)}%`; };

try {
	const page = context.pages()[0] || await context.newPage();
	const { errors, requests, outside } = watch(page);
	const url = pathToFileURL(resolve(svgPath)).href;
	await page.goto(url, { waitUntil: 'load' });

	const info = await page.evaluate(() => {
		const svg = document.documentElement;
		return { tag: svg.localName, x0: +svg.getAttribute('data-x0'), w: +svg.getAttribute('data-w'),
			total: +svg.getAttribute('data-total'), script: typeof window.flamegraph === 'object',
			frames: document.querySelectorAll('g.f').length,
			height: +svg.getAttribute('height') };
	});
	check(info.tag === 'svg' && info.frames > 0 && info.script,
		`the SVG loads with ${info.frames} frames and its script runs`,
		`the SVG did not load as an interactive flame graph: ${JSON.stringify(info)}`);
	await page.setViewportSize({ width: 1200, height: Math.min(Math.max(info.height, 300), 4000) });

	// Geometry of every frame named name: [{x, w, cls}].
	const geom = (name) => page.evaluate((n) => Array.from(document.querySelectorAll('g.f'))
		.filter((g) => g.getAttribute('data-n') === n)
		.map((g) => ({ x: +g.firstElementChild.getAttribute('x'),
			w: +g.firstElementChild.getAttribute('width'), cls: g.getAttribute('class'),
			shown: g.getBoundingClientRect().width > 0 })), name);
	const frame = (name) => page.locator(`g.f[data-n="${name}"]`).first();

	// --- zoom ---------------------------------------------------------------------------
	const before = zoomName === '-' ? [] : await geom(zoomName);
	if (zoomName === '-') {
		/* no zoom checks asked for */
	} else if (!before.length) {
		fail(`no frame named '${zoomName}' to zoom into`);
	} else {
		await frame(zoomName).locator('rect').click();
		const after = await geom(zoomName);
		const full = Math.abs(after[0].x - info.x0) < 0.01 && Math.abs(after[0].w - info.w) < 0.01;
		check(before[0].w < info.w - 1 && full,
			`click zooms: '${zoomName}' went from ${before[0].w.toFixed(1)} px to the full ${info.w} px`,
			`after a click '${zoomName}' is at x ${after[0].x}, ${after[0].w} px wide (full: x ${info.x0}, ${info.w} px; before ${before[0].w})`);
		const state = await page.evaluate(() => ({
			root: document.querySelector('g.f.root').getAttribute('class'),
			hidden: document.querySelectorAll('g.f.hide').length,
			reset: document.getElementById('reset').getAttribute('class') }));
		check(state.root.includes('anc') && state.hidden > 0 && !state.reset.includes('off'),
			`zoomed: the root is shown as an ancestor, ${state.hidden} frames outside the subtree are hidden, "Reset zoom" appears`,
			`zoom state wrong: ${JSON.stringify(state)}`);
		await page.locator('#reset').click();
		const reset = await geom(zoomName);
		const hidden = await page.locator('g.f.hide').count();
		check(Math.abs(reset[0].w - before[0].w) < 0.01 && hidden === 0,
			`"Reset zoom" restores the full view ('${zoomName}' ${reset[0].w.toFixed(1)} px again)`,
			`after reset '${zoomName}' is ${reset[0].w} px, ${hidden} frames hidden`);
		// Clicking the root unzooms too.
		await frame(zoomName).locator('rect').click();
		await page.locator('g.f.root rect').click();
		const viaRoot = await geom(zoomName);
		check(Math.abs(viaRoot[0].w - before[0].w) < 0.01, 'a click on the root unzooms',
			`after a click on the root '${zoomName}' is ${viaRoot[0].w} px`);
	}

	// --- search -------------------------------------------------------------------------
	page.once('dialog', (d) => d.accept(term));
	await page.locator('#search').click();
	const found = await page.evaluate((t) => {
		const all = Array.from(document.querySelectorAll('g.f'));
		const hit = all.filter((g) => g.classList.contains('hl'));
		const want = all.filter((g) => !g.classList.contains('root') && g.getAttribute('data-n').includes(t));
		// Expected share: the union of the matching frames' sample ranges.
		const r = want.map((g) => [+g.getAttribute('data-s'), +g.getAttribute('data-c')]).sort((a, b) => a[0] - b[0]);
		let n = 0, end = -1;
		for (const [s, c] of r) {
			if (s >= end) { n += c; end = s + c; } else if (s + c > end) { n += s + c - end; end = s + c; }
		}
		return { hit: hit.map((g) => g.getAttribute('data-n')), want: want.length, samples: n,
			fill: hit.length ? getComputedStyle(hit[0].firstElementChild).fill : '',
			matched: document.getElementById('matched').textContent };
	}, term);
	const share = pct(found.samples, info.total);
	check(found.hit.length > 0 && found.hit.length === found.want && found.hit.every((n) => n.includes(term)) &&
		found.fill === 'rgb(230, 0, 230)',
		`search '${term}' highlights the ${found.hit.length} matching frames (${found.fill})`,
		`search '${term}': highlighted ${JSON.stringify(found.hit)}, ${found.want} match, fill '${found.fill}'`);
	check(found.matched.startsWith(`Matched: ${share} (`),
		`the matched share is shown: '${found.matched}'`,
		`matched share shows '${found.matched}', expected ${share} (${found.samples} of ${info.total})`);

	// --- tooltip ------------------------------------------------------------------------
	// The widest match: the one a person would point at.
	const widest = await page.evaluate(() => {
		const w = Array.from(document.querySelectorAll('g.f.hl')).map((g) => +g.getAttribute('data-c'));
		return w.indexOf(Math.max(...w));
	});
	const firstHit = page.locator('g.f.hl').nth(Math.max(widest, 0));
	await firstHit.locator('rect').hover();
	const tip = await page.evaluate(() => {
		const t = document.getElementById('tip');
		return { off: t.classList.contains('off'), shown: t.getBoundingClientRect().width > 20,
			lines: Array.from(t.querySelectorAll('text')).map((e) => e.textContent) };
	});
	const g0 = await firstHit.evaluate((g) => ({ n: g.getAttribute('data-n'), m: g.getAttribute('data-m') || '-',
		c: +g.getAttribute('data-c') }));
	const tipShare = pct(g0.c, info.total);
	check(!tip.off && tip.shown && (tip.lines[0] === g0.n || tip.lines[0].startsWith(`${g0.n}:`)) && tip.lines[1].includes(g0.m) &&
		tip.lines[2].startsWith('kind: ') && tip.lines[3].startsWith(`${g0.c} sample`) && tip.lines[3].includes(tipShare),
		`hovering '${g0.n}' shows its tooltip: ${tip.lines.join(' | ')}`,
		`tooltip wrong for '${g0.n}' (${g0.m}, ${g0.c}, ${tipShare}): ${JSON.stringify(tip)}`);

	// The pictures a person sees: the whole graph with the search on and the tooltip up
	// (SCREENSHOT), then zoomed into the frame (SCREENSHOT less .png, plus -zoomed.png).
	await page.screenshot({ path: shotPath });
	ok(`screenshot saved: ${shotPath}`);
	if (zoomName !== '-') {
		await frame(zoomName).locator('rect').click();
		await frame(zoomName).locator('rect').hover();
		const zoomed = shotPath.replace(/\.png$/, '') + '-zoomed.png';
		await page.screenshot({ path: zoomed });
		ok(`zoomed screenshot saved: ${zoomed}`);
	}

	// A search given in the address, FILE.svg?s=TERM, is applied on load.
	await page.goto(`${url}?s=${encodeURIComponent(term)}`, { waitUntil: 'load' });
	const fromUrl = await page.evaluate(() => ({ matched: document.getElementById('matched').textContent,
		hl: document.querySelectorAll('g.f.hl').length }));
	check(fromUrl.matched === found.matched && fromUrl.hl === found.hit.length,
		`?s=${term} in the address searches on load (${fromUrl.hl} frames highlighted)`,
		`?s=${term}: '${fromUrl.matched}', ${fromUrl.hl} highlighted; the search box gave '${found.matched}'`);

	check(outside().length === 0, `no request left the file (${requests.length} request(s), all file:)`,
		`the SVG requested ${outside().join(', ')}`);
	check(errors.length === 0, 'no script error in the page', `page errors: ${errors.join('; ').slice(0, 400)}`);
} catch (e) {
	fail(`browser test stopped: ${String(e.message).split('\n').slice(0, 3).join(' ')}`);
} finally {
	await close();
}
process.exit(failed() ? 1 : 0);
