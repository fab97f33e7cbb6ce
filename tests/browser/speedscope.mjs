// SPDX-License-Identifier: MIT
// Imports a profile (stackpulse's speedscope JSON or perf-script text) into the speedscope
// app that the npm package ships, in headless Chromium, as a person would with its Browse
// button; checks the import succeeded and that the Sandwich view, sorted by self time,
// puts the expected hot function first.
//
// Usage: node speedscope.mjs PROFILE HOT-FUNCTION SCREENSHOT.png
// Prints the e2e result lines ("ok: ", "FAIL: ", "skip: "); exits 1 when a check failed.
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { check, fail, failed, launch, ok, watch } from './chromium.mjs';

const [profile, hot, shotPath] = process.argv.slice(2);
if (!shotPath) {
	console.log('FAIL: usage: node speedscope.mjs PROFILE HOT-FUNCTION SCREENSHOT.png');
	process.exit(1);
}
const here = dirname(fileURLToPath(import.meta.url));
const app = join(here, 'node_modules', 'speedscope', 'dist', 'release', 'index.html');
if (!existsSync(app)) {
	console.log('skip: the speedscope package is not installed (npm ci in tests/browser): profile not imported');
	process.exit(0);
}
const what = basename(profile);
const { context, close } = await launch(`'${what}'`);
try {
	const page = context.pages()[0] || await context.newPage();
	const { errors, outside } = watch(page);
	await page.goto(pathToFileURL(app).href, { waitUntil: 'load' });
	await page.locator('input[type=file]').first().setInputFiles(resolve(profile));
	let title = '';
	try {
		await page.waitForFunction(() => document.title.endsWith(' - speedscope'), null, { timeout: 30000 });
		title = await page.title();
	} catch {
		title = '';
	}
	const body = await page.evaluate(() => document.body.innerText.slice(0, 300));
	check(title !== '', `speedscope imports ${what}: '${title}'`,
		`speedscope did not import ${what}: ${body.replace(/\s+/g, ' ')}`);
	if (title) {
		await page.getByText('Sandwich', { exact: false }).first().click();
		// The Self column: the first click sorts ascending, the second descending.  The
		// table re-renders after each click: wait for it to change (a loaded machine
		// can take a while) before reading the order.
		const self = page.locator('th', { hasText: 'Self' }).first();
		const read = () => page.evaluate(() => Array.from(document.querySelectorAll('tr'))
			.map((r) => Array.from(r.querySelectorAll('td')).map((td) => td.innerText.trim()))
			.filter((c) => c.length >= 3)
			// speedscope writes "(<0.01%)" and "(>99%)": the bound is the value here.
			.map((c) => ({ self: parseFloat((/\(([<>0-9.]+)%\)/.exec(c[1]) || [0, '0'])[1].replace(/[<>]/, '')),
				name: c[c.length - 1] })));
		const descending = (r) => r.length > 0 && r[0].self > 0 &&
			r.every((x, i) => i === 0 || x.self <= r[i - 1].self);
		let rows = await read();
		for (let i = 0; i < 3 && !descending(rows); i++) {
			const before = JSON.stringify(rows);
			await self.click();
			for (let t = 0; t < 50 && JSON.stringify(rows) === before; t++) {
				await page.waitForTimeout(100);
				rows = await read();
			}
		}
		check(rows.length > 0 && rows[0].name === hot && rows.every((r) => r.self <= rows[0].self),
			`speedscope's Sandwich view by self time puts ${hot} first (${rows.length ? rows[0].self : 0}% self)`,
			`speedscope's Sandwich view by self time starts with ${JSON.stringify(rows.slice(0, 3))}`);
		await page.screenshot({ path: shotPath });
		ok(`screenshot saved: ${shotPath}`);
	}
	check(outside().length === 0, 'speedscope made no request beyond its own files',
		`speedscope requested ${outside().join(', ')}`);
	check(errors.length === 0, 'no script error in speedscope', `page errors: ${errors.join('; ').slice(0, 400)}`);
} catch (e) {
	fail(`speedscope import of ${what} stopped: ${String(e.message).split('\n').slice(0, 3).join(' ')}`);
} finally {
	await close();
}
process.exit(failed() ? 1 : 0);
