/* SPDX-License-Identifier: MIT */
/* Annotation's disassembly: a function's code decoded with capstone, branch targets kept. */
#include "report/annotate.h"

#include <capstone.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * capstone is loaded when annotate first disassembles, not linked: its shared
 * library carries some 77,000 relocations that the loader applies at start,
 * 3.3 MiB of resident memory in every command (record's peak went from 3.2 to
 * 6.8 MiB) for what annotate alone uses.  Its header still gives the types.
 */
struct capstone {
	cs_err (*open)(cs_arch arch, cs_mode mode, csh *handle);
	cs_err (*option)(csh handle, cs_opt_type type, size_t value);
	cs_insn *(*malloc)(csh handle);
	bool (*disasm_iter)(csh handle, const uint8_t **code, size_t *size, uint64_t *address,
			    cs_insn *insn);
	void (*free)(cs_insn *insn, size_t count);
	cs_err (*close)(csh *handle);
};

static struct capstone capstone_fns;
static bool capstone_loaded;
static pthread_once_t capstone_once = PTHREAD_ONCE_INIT;

static void load_capstone(void)
{
	/*
	 * Only the library of the header's major version: cs_insn's layout changes
	 * between them (its bytes[] grew from 16 to 24 in capstone 5).
	 */
	char soname[32];
	snprintf(soname, sizeof(soname), "libcapstone.so.%d", CS_API_MAJOR);
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	struct capstone c = {
		.open = (cs_err(*)(cs_arch, cs_mode, csh *))dlsym(h, "cs_open"),
		.option = (cs_err(*)(csh, cs_opt_type, size_t))dlsym(h, "cs_option"),
		.malloc = (cs_insn * (*)(csh)) dlsym(h, "cs_malloc"),
		.disasm_iter = (bool (*)(csh, const uint8_t **, size_t *, uint64_t *,
					 cs_insn *))dlsym(h, "cs_disasm_iter"),
		.free = (void (*)(cs_insn *, size_t))dlsym(h, "cs_free"),
		.close = (cs_err(*)(csh *))dlsym(h, "cs_close"),
	};
	if (!c.open || !c.option || !c.malloc || !c.disasm_iter || !c.free || !c.close) {
		dlclose(h);
		return;
	}
	capstone_fns = c; /* the library stays loaded for the process's life */
	capstone_loaded = true;
}

/*
 * A direct branch or call's target, read from its operand text: capstone
 * prints it as one immediate ("0x401136" in AT&T x86 after "j*", "call" or
 * "loop*"; "#0x401136" after AArch64's "b", "b.*", "bl", "cb*", "tb*").
 * Reading the text keeps capstone's detail mode off, which costs more than
 * the decoding itself.
 */
static bool branch_target(uint16_t machine, const char *mnemonic, const char *ops, uint64_t *t)
{
	const char *p = ops;
	if (machine == EM_X86_64 || machine == EM_386) {
		if (mnemonic[0] != 'j' && strncmp(mnemonic, "call", 4) && strncmp(mnemonic, "loop", 4) &&
		    strncmp(mnemonic, "bnd j", 5) && strncmp(mnemonic, "notrack j", 9))
			return false;
	} else if (machine == EM_AARCH64) {
		bool b = !strcmp(mnemonic, "b") || !strncmp(mnemonic, "b.", 2) || !strcmp(mnemonic, "bl");
		bool cb = !strncmp(mnemonic, "cb", 2) || !strncmp(mnemonic, "tb", 2);
		if (!b && !cb)
			return false;
		if (cb && (p = strrchr(ops, ',')))
			p++;
		while (p && (*p == ' ' || *p == '#'))
			p++;
	} else {
		return false;
	}
	if (!p || p[0] != '0' || p[1] != 'x')
		return false;
	char *end;
	*t = strtoull(p, &end, 16);
	return *end == '\0';
}

static int put_text(struct sp_ann_listing *l, const char *mnemonic, const char *ops, uint32_t *off)
{
	size_t m = strlen(mnemonic), o = strlen(ops), need = m + (o ? 1 + o : 0) + 1;
	if (l->text_len + need > UINT32_MAX ||
	    sp_array_reserve((void **)&l->text, &l->text_cap, l->text_len + need, 1))
		return -ENOMEM;
	*off = (uint32_t)l->text_len;
	char *p = l->text + l->text_len;
	memcpy(p, mnemonic, m);
	if (o) {
		p[m] = ' ';
		memcpy(p + m + 1, ops, o);
	}
	p[need - 1] = '\0';
	l->text_len += need;
	return 0;
}

int sp_ann_disasm(const struct sp_ann_code *code, struct sp_ann_listing *l)
{
	memset(l, 0, sizeof(*l));
	cs_arch arch;
	cs_mode mode;
	if (code->machine == EM_X86_64) {
		arch = CS_ARCH_X86;
		mode = CS_MODE_64;
	} else if (code->machine == EM_386) {
		arch = CS_ARCH_X86;
		mode = CS_MODE_32;
	} else if (code->machine == EM_AARCH64) {
		arch = CS_ARCH_ARM64;
		mode = CS_MODE_ARM;
	} else {
		return -ENOTSUP;
	}
	pthread_once(&capstone_once, load_capstone);
	if (!capstone_loaded)
		return -ELIBACC;
	const struct capstone *cs = &capstone_fns;
	csh h;
	if (cs->open(arch, mode, &h) != CS_ERR_OK)
		return -ENOTSUP;
	if (arch == CS_ARCH_X86)
		cs->option(h, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT); /* perf's and objdump's syntax */
	cs_insn *insn = cs->malloc(h);
	int err = insn ? 0 : -ENOMEM;
	const uint8_t *p = code->bytes;
	size_t left = (size_t)(code->end - code->start);
	uint64_t addr = code->start;
	while (left && !err) {
		struct sp_ann_insn in = {.addr = addr};
		if (cs->disasm_iter(h, &p, &left, &addr, insn)) {
			in.size = insn->size;
			in.has_target = branch_target(code->machine, insn->mnemonic, insn->op_str,
						      &in.target);
			err = put_text(l, insn->mnemonic, insn->op_str, &in.text);
		} else {
			/* Not an instruction capstone knows: one byte, and decode on after it. */
			char ops[8];
			snprintf(ops, sizeof(ops), "0x%02x", *p);
			in.size = 1;
			p++;
			left--;
			addr++;
			err = put_text(l, "(bad)", ops, &in.text);
		}
		if (!err && sp_array_reserve((void **)&l->insns, &l->cap, l->n + 1, sizeof(*l->insns)))
			err = -ENOMEM;
		if (!err)
			l->insns[l->n++] = in;
	}
	if (insn)
		cs->free(insn, 1);
	cs->close(&h);
	if (err)
		sp_ann_listing_release(l);
	return err;
}

void sp_ann_listing_release(struct sp_ann_listing *l)
{
	free(l->insns);
	free(l->text);
	memset(l, 0, sizeof(*l));
}
