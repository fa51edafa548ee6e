/* SPDX-License-Identifier: Apache-2.0 */
/* Writes a minimal relocatable ELF "module" that depmod understands: a
 * .modinfo section, the exported symbols in __ksymtab_strings and the
 * imported ones as undefined symbols in .symtab. */
#ifndef KVRUN_TESTS_FAKE_KO_H
#define KVRUN_TESTS_FAKE_KO_H

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct strbuf {
	char b[4096];
	size_t len;
};

static size_t sb_add(struct strbuf *s, const char *str)
{
	size_t off = s->len, n = strlen(str) + 1;

	memcpy(s->b + s->len, str, n);
	s->len += n;
	return off;
}

static size_t align8(size_t v)
{
	return (v + 7) & ~(size_t)7;
}

/* exports/imports: space-separated symbol names ("" for none); modinfo:
 * extra "key=value" strings separated by '|' ("" for none). */
static int fake_ko_write(const char *path, const char *name, const char *exports, const char *imports,
                         const char *modinfo)
{
	struct strbuf info = {0}, ksym = {0}, strtab = {0}, shstr = {0};
	Elf64_Sym syms[32] = {{0}};
	Elf64_Shdr sh[6] = {{0}};
	Elf64_Ehdr eh = {0};
	unsigned int nsyms = 1;
	char tmp[512], *save, *tok;
	size_t off;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "name=%s", name);
	sb_add(&info, tmp);
	sb_add(&info, "license=GPL");
	snprintf(tmp, sizeof(tmp), "%s", modinfo);
	for (tok = strtok_r(tmp, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
		sb_add(&info, tok);
	snprintf(tmp, sizeof(tmp), "%s", exports);
	for (tok = strtok_r(tmp, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		sb_add(&ksym, tok);
	sb_add(&strtab, "");
	snprintf(tmp, sizeof(tmp), "%s", imports);
	for (tok = strtok_r(tmp, " ", &save); tok && nsyms < 32; tok = strtok_r(NULL, " ", &save)) {
		syms[nsyms].st_name = (Elf64_Word)sb_add(&strtab, tok);
		syms[nsyms].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_NOTYPE);
		syms[nsyms].st_shndx = SHN_UNDEF;
		nsyms++;
	}
	sb_add(&shstr, "");
	sh[1].sh_name = (Elf64_Word)sb_add(&shstr, ".modinfo");
	sh[2].sh_name = (Elf64_Word)sb_add(&shstr, "__ksymtab_strings");
	sh[3].sh_name = (Elf64_Word)sb_add(&shstr, ".symtab");
	sh[4].sh_name = (Elf64_Word)sb_add(&shstr, ".strtab");
	sh[5].sh_name = (Elf64_Word)sb_add(&shstr, ".shstrtab");

	off = sizeof(eh);
	sh[1] = (Elf64_Shdr){.sh_name = sh[1].sh_name,
	                     .sh_type = SHT_PROGBITS,
	                     .sh_flags = SHF_ALLOC,
	                     .sh_offset = off,
	                     .sh_size = info.len,
	                     .sh_addralign = 1};
	off += info.len;
	sh[2] = (Elf64_Shdr){.sh_name = sh[2].sh_name,
	                     .sh_type = SHT_PROGBITS,
	                     .sh_flags = SHF_ALLOC,
	                     .sh_offset = off,
	                     .sh_size = ksym.len,
	                     .sh_addralign = 1};
	off = align8(off + ksym.len);
	sh[3] = (Elf64_Shdr){.sh_name = sh[3].sh_name,
	                     .sh_type = SHT_SYMTAB,
	                     .sh_offset = off,
	                     .sh_size = nsyms * sizeof(Elf64_Sym),
	                     .sh_link = 4,
	                     .sh_info = 1,
	                     .sh_addralign = 8,
	                     .sh_entsize = sizeof(Elf64_Sym)};
	off += nsyms * sizeof(Elf64_Sym);
	sh[4] = (Elf64_Shdr){.sh_name = sh[4].sh_name,
	                     .sh_type = SHT_STRTAB,
	                     .sh_offset = off,
	                     .sh_size = strtab.len,
	                     .sh_addralign = 1};
	off += strtab.len;
	sh[5] = (Elf64_Shdr){
	    .sh_name = sh[5].sh_name, .sh_type = SHT_STRTAB, .sh_offset = off, .sh_size = shstr.len, .sh_addralign = 1};
	off = align8(off + shstr.len);

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_REL;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_shoff = off;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 6;
	eh.e_shstrndx = 5;

	f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(&eh, sizeof(eh), 1, f);
	fwrite(info.b, info.len, 1, f);
	fwrite(ksym.b, ksym.len, 1, f);
	fseek(f, (long)sh[3].sh_offset, SEEK_SET);
	fwrite(syms, sizeof(Elf64_Sym), nsyms, f);
	fwrite(strtab.b, strtab.len, 1, f);
	fwrite(shstr.b, shstr.len, 1, f);
	fseek(f, (long)off, SEEK_SET);
	fwrite(sh, sizeof(sh), 1, f);
	return fclose(f) == 0 ? 0 : -1;
}

#endif
